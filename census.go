package offheap

import (
	"fmt"
	"sync/atomic"
)

// Stats is a census of a heap: every operation is counted where it happens,
// the fast path included, so the counts are exact once the heap is quiet.
// While other goroutines allocate and free, a Stats is a consistent-enough
// snapshot, not an atomic one.
//
// MagazineHits + CentralHits + Fresh + Large == Allocs.
type Stats struct {
	Allocs, Frees uint64 // every Alloc and Free of a non-empty block, fast path included
	MagazineHits  uint64 // Allocs served by a per-P magazine
	CentralHits   uint64 // Allocs served by a central free list
	Fresh         uint64 // Allocs carved from a span's never-used blocks
	Large         uint64 // Allocs above the largest size class

	// LiveBlocks is the number of blocks allocated and not yet freed:
	// Allocs - Frees, every kind of block included (an Arena's chunks, a
	// Shared's block; in checked mode a block in quarantine is freed). It is
	// exact once the heap is quiet. While other goroutines allocate and
	// free, a Free counted before its Alloc could make Frees pass Allocs;
	// LiveBlocks is then 0, never a wrapped-around count.
	LiveBlocks uint64

	InUseBytes    uint64 // bytes in live blocks, counted at block size (class size, or whole pages for large)
	MappedBytes   uint64 // bytes committed and not released: what the heap costs in memory, bounded by Options.Limit
	ReleasedBytes uint64 // bytes given back to the operating system and kept reserved for reuse
	MagazineBytes uint64 // bytes of free blocks parked in per-P magazines
	DepotBytes    uint64 // bytes of free blocks in the central depots, waiting for a magazine

	Classes []ClassStats // per size class, smallest first
}

// ClassStats is the census of one size class.
type ClassStats struct {
	Size   int    // block size in bytes
	Allocs uint64 // Allocs served by this class
	Frees  uint64 // Frees of this class
	InUse  uint64 // live blocks: Allocs - Frees
}

// Stats returns the heap's census. It takes each lock briefly and reads the
// magazines without stopping their owners.
func (h *Heap) Stats() Stats {
	var s Stats
	s.Classes = make([]ClassStats, numClasses-1)
	for c := 1; c < numClasses; c++ {
		cs := &s.Classes[c-1]
		cs.Size = int(classSize[c])
		cen := &h.central[c]
		cen.mu.Lock()
		s.CentralHits += cen.hits
		s.Fresh += cen.fresh
		cs.Allocs = cen.hits + cen.fresh
		cs.Frees = cen.frees
		for _, b := range cen.depot {
			s.DepotBytes += uint64(b.n) * uint64(cs.Size)
		}
		cen.mu.Unlock()
	}
	h.magMu.Lock()
	if !h.closed.Load() {
		for _, m := range h.allMags {
			for c := 1; c < numClasses; c++ {
				mc := &m.cls[c]
				// The owner P writes these with plain stores; an aligned
				// 64-bit load never sees a torn value.
				hits := atomic.LoadUint64(&mc.hits)
				s.MagazineHits += hits
				s.Classes[c-1].Allocs += hits
				s.Classes[c-1].Frees += atomic.LoadUint64(&mc.frees)
				s.MagazineBytes += uint64(atomic.LoadUint32(&mc.n)) * uint64(classSize[c])
			}
		}
	} else {
		s.MagazineHits = h.closedMagHits
		for c := 1; c < numClasses; c++ {
			s.Classes[c-1].Allocs += h.closedClass[c].hits
			s.Classes[c-1].Frees += h.closedClass[c].frees
		}
	}
	h.magMu.Unlock()
	for c := range s.Classes {
		cs := &s.Classes[c]
		cs.InUse = cs.Allocs - cs.Frees
		s.Allocs += cs.Allocs
		s.Frees += cs.Frees
		s.InUseBytes += cs.InUse * uint64(cs.Size)
	}
	ph := &h.pages
	ph.mu.Lock()
	s.Large = ph.largeAllocs
	s.Allocs += ph.largeAllocs
	s.Frees += ph.largeFrees
	s.InUseBytes += ph.largePages << pageShift
	if !ph.closed {
		s.MappedBytes = uint64(ph.mappedPages()) << pageShift
		s.ReleasedBytes = uint64(ph.released) << pageShift
	}
	ph.mu.Unlock()
	if h.chk != nil {
		// Checked mode: blocks in the quarantine are freed as far as the
		// program is concerned (checked.go).
		h.chk.census(&s)
	}
	s.LiveBlocks = liveBlocks(s.Allocs, s.Frees)
	return s
}

// liveBlocks is allocs - frees, or 0 when a snapshot counted more frees.
func liveBlocks(allocs, frees uint64) uint64 {
	if frees > allocs {
		return 0
	}
	return allocs - frees
}

// String summarizes s on one line, for logs: the operations, then the
// bytes. The per-class census is left out; print s.Classes for it.
func (s Stats) String() string {
	return fmt.Sprintf("%d allocs (%d magazine, %d central, %d fresh, %d large), %d frees; %s in use, %s mapped, %s released, %s in magazines, %s in depots",
		s.Allocs, s.MagazineHits, s.CentralHits, s.Fresh, s.Large, s.Frees,
		sizeString(s.InUseBytes), sizeString(s.MappedBytes), sizeString(s.ReleasedBytes),
		sizeString(s.MagazineBytes), sizeString(s.DepotBytes))
}

// sizeString formats n bytes in the largest binary unit it fills:
// "512 B", "1.5 KiB", "64.0 MiB".
func sizeString(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	i, v := 0, float64(n)/1024
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}
