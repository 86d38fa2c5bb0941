//go:build race

package pageheap

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// In a race-detector build every region is Go memory: a pointer-free []byte
// from make, which the garbage collector never scans, held in raceRegions
// from mapRegion to unmapRegion, so that it outlives every block in it. Go's
// race runtime checks an access only when its address lies in the Go heap or
// the data segments; an mmap reservation lies elsewhere, and the detector
// would see no access to a block at all. Everything else stays as it is: the
// size classes, magazines, spans, census and checks, and the metadata (the
// pagemap, spans, magazines, records), which stays mapped with mmap.
//
// What changes with it:
//
//   - NewHeap's first region is at most raceFirstRegion, not 64 GiB of
//     reservation: Go memory is allocated, if not touched, at once, and
//     the Go runtime counts it as its heap. The heap grows by regions as it
//     needs, each one Go memory too, and never one larger than
//     the machine's memory and swap (osmem.Memory), which Go could not map
//     and would die of: an allocation that needs one fails as when the
//     system refuses address space.
//   - Committing is a no-op: Go memory is readable and writable.
//   - Protecting is a no-op: mprotect on Go memory would fault the Go
//     runtime when it reuses the memory. Guard pages (GuardPages,
//     GuardOneIn) keep their layout, but nothing faults: see the package
//     doc, Race detector.
//   - Released pages are given back with madvise as in a fast build: it
//     works on Go's private anonymous memory as on any, and the pages read
//     as zeros afterwards, which the page heap relies on. A new region's
//     pages are given back at once too (Go zeroed them if it reused the
//     memory), so that a region costs memory only as it is written, as a
//     reservation does, and ResidentBytes says so.
//   - Close gives the regions back to raceRegions's spares, for the next
//     heaps: a slice of a closed heap reads zeros or a later heap's bytes
//     instead of faulting.

const (
	// raceFirstRegion bounds NewHeap's first region in race builds.
	raceFirstRegion = 4 << 20

	// raceRegionSlack is Go memory past each region's end that the heap
	// never uses. checkptr (on with -race) demands that a pointer converted
	// to *T covers T's size inside one Go object, and an arena's per-P
	// array is a few lines of a block viewed as arenaProcs, 128 KiB as a
	// type: the slack keeps such a view inside the region's object.
	raceRegionSlack = 256 << 10
)

// raceRegions holds the Go memory of every region of every open heap, by
// the region's base address, and spares: the memory of closed heaps'
// regions, given back to the system (madvise) and kept for the next heap,
// up to raceSpareBytes. A program under test makes and closes many heaps,
// and a new Go allocation of a region costs the race runtime and Go's
// zeroing of reused memory milliseconds (NewHeap and Close of a heap with a
// 64 MiB first region took 12 ms, against 1.2 with spares), where a spare
// reads as zeros already. Its lock orders a spare's last use, which came
// before its heap's Close, before its next heap's first: the detector sees
// the lock, and needs no other edge.
var raceRegions struct {
	mu     sync.Mutex
	m      map[uintptr][]byte
	spares [][]byte
	spare  uintptr // bytes in spares
}

// raceSpareBytes bounds the bytes kept in spares: address space and Go heap,
// not memory, since a spare's pages are given back.
const raceSpareBytes = 64 << 20

// firstRegionSize is the size of the first region NewHeap reserves, for the
// size the heap would like: at most raceFirstRegion.
func firstRegionSize(want uintptr) uintptr { return min(want, raceFirstRegion) }

// MapRegion allocates n bytes of zeroed Go memory for a region, osPageBytes
// aligned. n is a multiple of osPageBytes.
func MapRegion(n uintptr) (unsafe.Pointer, error) {
	if most := osmem.Memory(); most != 0 && uint64(n) > most {
		return nil, fmt.Errorf("offheap: a race build (-race) backs the heap with Go memory, and a region of %s is more than this machine's memory and swap (%s)",
			SizeString(uint64(n)), SizeString(most))
	}
	want := n + raceRegionSlack
	raceRegions.mu.Lock()
	defer raceRegions.mu.Unlock()
	var b []byte
	best := -1
	for i, s := range raceRegions.spares { // the smallest that fits
		if uintptr(len(s)) >= want && (best < 0 || len(s) < len(raceRegions.spares[best])) {
			best = i
		}
	}
	if best >= 0 {
		b = raceRegions.spares[best]
		raceRegions.spares = slices.Delete(raceRegions.spares, best, best+1)
		raceRegions.spare -= uintptr(len(b))
	} else {
		b = make([]byte, want+OSPageBytes)
		// Go starts a large object on one of its 8 KiB pages; the OS page
		// more aligns it to the OS page, or to a heap page should Go not.
		b = b[-uintptr(unsafe.Pointer(unsafe.SliceData(b)))&(OSPageBytes-1):]
		// Go zeroed it, if it reused memory, and made it resident: give
		// the pages back, so that a region costs memory only as it is
		// written, as a reservation does (and ResidentBytes says so).
		_ = osmem.Release(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b))&^(osmem.PageSize-1))
	}
	if raceRegions.m == nil {
		raceRegions.m = make(map[uintptr][]byte)
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	raceRegions.m[uintptr(p)] = b
	return p, nil
}

// UnmapRegion gives back a region mapRegion made: its pages to the system,
// its memory to the spares or, past raceSpareBytes, to the garbage
// collector, which frees it once no slice of the program points into it.
func UnmapRegion(p unsafe.Pointer, n uintptr) error {
	raceRegions.mu.Lock()
	defer raceRegions.mu.Unlock()
	b, ok := raceRegions.m[uintptr(p)]
	if !ok {
		return fmt.Errorf("offheap: unmapping %#x+%d: not a region", uintptr(p), n)
	}
	delete(raceRegions.m, uintptr(p))
	if raceRegions.spare+uintptr(len(b)) > raceSpareBytes {
		return nil
	}
	if osmem.Release(p, uintptr(len(b))&^(osmem.PageSize-1)) != nil {
		return nil // not zeroed: not a spare
	}
	raceRegions.spares = append(raceRegions.spares, b)
	raceRegions.spare += uintptr(len(b))
	return nil
}

// CommitRegion does nothing: Go memory is readable and writable.
func CommitRegion(unsafe.Pointer, uintptr) error { return nil }

// ProtectRegion does nothing: see above.
func ProtectRegion(unsafe.Pointer, uintptr) error { return nil }

// errRaceNoMove is movePages's error in a race build.
var errRaceNoMove = errors.New("offheap: a race build's regions are Go memory, whose pages are not moved")

// MovePages fails: the Go runtime owns the page tables of Go memory, so the
// caller copies (a build on the system's memory moves the pages).
func MovePages(dst, src unsafe.Pointer, n uintptr) error { return errRaceNoMove }

// renewRegion gives the pages of [p, p+n) back (osmem.Release): Go memory
// is never moved, so it is never split off, and a new mapping over it would
// take it from the Go runtime.
func renewRegion(p unsafe.Pointer, n uintptr) error { return osmem.Release(p, n) }

// regionsCollapse is false: Go memory's pages are the Go runtime's to
// arrange, and HugePages does nothing in a race build.
const regionsCollapse = false

// collapseRegion is never called in a race build (regionsCollapse).
func collapseRegion(unsafe.Pointer, uintptr) error { return errRaceNoMove }
