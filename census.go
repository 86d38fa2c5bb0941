package offheap

import (
	"fmt"
	"sync/atomic"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
)

// Stats returns the heap's census. It takes each lock briefly and reads the
// magazines without stopping their owners.
func (h *Heap) Stats() Stats {
	var s Stats
	s.Classes = make([]ClassStats, numClasses-1)
	open := !h.closed.Load() // a closed heap's depots hold memory no more
	for c := 1; c < numClasses; c++ {
		cs := &s.Classes[c-1]
		cs.Size = int(classSize[c])
		cen := &h.central[c]
		cen.mu.Lock()
		hits, fresh := cen.hits.Load(), cen.fresh.Load()
		s.CentralHits += hits
		s.Fresh += fresh
		cs.Allocs = hits + fresh
		cs.Frees = cen.frees.Load()
		cs.SpanFreeBytes = cen.spanFree * uint64(cs.Size)
		cs.Relocations = cen.moved.Load()
		s.SpanFreeBytes += cs.SpanFreeBytes
		s.Relocations += cs.Relocations
		if open {
			for _, b := range cen.depot {
				s.DepotBytes += uint64(b.n) * uint64(cs.Size)
			}
		}
		s.CorruptBytes += cen.corrupt.Load() * uint64(cs.Size)
		cen.mu.Unlock()
	}
	ms := &h.mags
	ms.mu.Lock()
	if !h.closed.Load() {
		for _, m := range ms.all {
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
		s.MagazineHits = ms.closedHits
		for c := 1; c < numClasses; c++ {
			s.Classes[c-1].Allocs += ms.closedClass[c].hits
			s.Classes[c-1].Frees += ms.closedClass[c].frees
		}
	}
	ms.mu.Unlock()
	h.censusCaches(&s)
	for c := range s.Classes {
		cs := &s.Classes[c]
		// Clamped: a double free that no check saw (fast mode sees most, not
		// all), or a snapshot taken while other goroutines free, may count
		// more Frees than Allocs.
		cs.InUse = cs.Allocs - min(cs.Frees, cs.Allocs)
		s.Allocs += cs.Allocs
		s.Frees += cs.Frees
		s.InUseBytes += cs.InUse * uint64(cs.Size)
	}
	pc := h.pages.Census()
	s.Large = pc.RunAllocs
	s.Allocs += pc.RunAllocs
	s.Frees += pc.RunFrees
	s.InUseBytes += pc.RunPages << pageShift
	s.MappedBytes, s.ReleasedBytes = pc.Mapped, pc.Released
	if h.chk != nil {
		// Checked mode: blocks in the quarantine are freed as far as the
		// program is concerned.
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

// InUse returns the bytes in live blocks and the number of live blocks, as
// Stats counts them, without a lock or an allocation: a program that bounds
// its memory reads them here rather than keeping a shared counter of its
// own, which would cost every Alloc and Free a contended atomic. It reads
// every P's census, so call it where Stats would be too slow, not on every
// allocation.
func (h *Heap) InUse() (bytes, blocks uint64) {
	// net[c] is class c's Allocs - Frees, summed modulo 2^64: a counter
	// read before a concurrent Alloc and another read after the matching
	// Free may make a sum briefly negative, so the totals are clamped.
	var net [numClasses]uint64
	for c := 1; c < numClasses; c++ {
		cen := &h.central[c]
		net[c] = cen.hits.Load() + cen.fresh.Load() - cen.frees.Load()
	}
	// The magazines are read between enter and exit: Close unmaps them.
	if !h.enter() {
		h.mags.mu.Lock()
		for c := 1; c < numClasses; c++ {
			net[c] += h.mags.closedClass[c].hits - h.mags.closedClass[c].frees
		}
		h.mags.mu.Unlock()
		h.caches.mu.Lock()
		for c := 1; c < numClasses; c++ {
			net[c] += h.caches.closed.class[c].hits - h.caches.closed.class[c].frees
		}
		h.caches.mu.Unlock()
	} else {
		defer h.exit()
		if mags := h.mags.list.Load(); mags != nil {
			for _, m := range *mags {
				for c := 1; c < numClasses; c++ {
					mc := &m.cls[c]
					// The owner P writes these with plain stores, as Stats says.
					net[c] += atomic.LoadUint64(&mc.hits) - atomic.LoadUint64(&mc.frees)
				}
			}
		}
		// The Locals' states too, which the heap's Close unmaps; the
		// Locals' owners write them as the Ps write their magazines.
		if sts := h.caches.list.Load(); sts != nil {
			for _, st := range *sts {
				for c := 1; c < numClasses; c++ {
					mc := &st.cls[c]
					net[c] += atomic.LoadUint64(&mc.hits) - atomic.LoadUint64(&mc.frees)
				}
			}
		}
	}
	var largeQ, pagesQ uint64 // in a checker's quarantine: freed for the program
	if h.chk != nil {
		var q [numClasses]uint64
		largeQ, pagesQ = h.chk.quarantined(&q)
		for c := 1; c < numClasses; c++ {
			net[c] -= q[c]
		}
	}
	allocs, frees, pages := h.pages.RunCounts()
	n := int64(allocs - frees - largeQ)
	b := int64(pages-pagesQ) << pageShift
	for c := 1; c < numClasses; c++ {
		n += int64(net[c])
		b += int64(net[c]) * int64(classSize[c])
	}
	return uint64(max(b, 0)), uint64(max(n, 0))
}

// mappedBytes is Stats().MappedBytes without a lock.
func (h *Heap) mappedBytes() uint64 {
	if h.closed.Load() {
		return 0 // Close unmapped it all
	}
	return h.pages.Mapped.Load()
}

// String summarizes s on one line, for logs: the operations, then the
// bytes. The per-class census is left out; print s.Classes for it.
func (s Stats) String() string {
	return fmt.Sprintf("%d allocs (%d magazine, %d local, %d central, %d fresh, %d large), %d frees; %s in use, %s mapped, %s released, %s in magazines, %s in depots, %s in Locals",
		s.Allocs, s.MagazineHits, s.LocalHits, s.CentralHits, s.Fresh, s.Large, s.Frees,
		pageheap.SizeString(s.InUseBytes), pageheap.SizeString(s.MappedBytes), pageheap.SizeString(s.ReleasedBytes),
		pageheap.SizeString(s.MagazineBytes), pageheap.SizeString(s.DepotBytes), pageheap.SizeString(s.LocalBytes))
}

// HugePageBytes returns how many bytes of the heap's regions are in
// transparent huge pages, from /proc/self/smaps. Reading it makes the kernel
// walk every mapping of the process: a figure to look at now and then, not a
// counter to poll.
func (h *Heap) HugePageBytes() (uint64, error) {
	if !h.enter() {
		return 0, ErrClosed
	}
	defer h.exit()
	var ranges [][2]uintptr
	for _, r := range h.pages.Regions.Load().ByPage {
		ranges = append(ranges, [2]uintptr{r.Base, r.Base + r.Bytes})
	}
	return osmem.AnonHugeBytes(ranges)
}
