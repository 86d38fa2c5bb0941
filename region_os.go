//go:build !race

package offheap

import (
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// A region's memory comes from the operating system: address space reserved
// with mmap, committed in runs as the page heap needs it. (A race-detector
// build uses Go memory instead: region_race.go.)

// firstRegionSize is the size of the first region NewHeap reserves, for the
// size the heap would like: that size.
func firstRegionSize(want uintptr) uintptr { return want }

// regionGuard is the inaccessible address space a region keeps on either
// side of it, reserved with it and never committed: at least the largest
// size class, so that no write running or skipping past a block at the
// region's edge, short of that many bytes, reaches whatever the system maps
// next to it, the heap's metadata included (docs/DESIGN.md, What lives
// where). A multiple of the largest OS page, 64 KiB (ospage.go), and so of
// osPageBytes, so the region stays aligned.
const regionGuard = maxSmall

var _ = [1]struct{}{}[regionGuard%(64<<10)]

// mapRegion obtains n bytes of address space for a region, osPageBytes
// aligned and inaccessible until committed (commitRegion), between two
// guards of regionGuard bytes. n is a multiple of osPageBytes.
func mapRegion(n uintptr) (unsafe.Pointer, error) {
	p, err := reserveAligned(n + 2*regionGuard)
	if err != nil {
		return nil, err
	}
	return unsafe.Add(p, regionGuard), nil
}

// reserveAligned reserves n bytes of address space, osPageBytes aligned. n
// is a multiple of osPageBytes.
func reserveAligned(n uintptr) (unsafe.Pointer, error) {
	if osmem.PageSize == osPageBytes {
		return osmem.Reserve(n) // mmap aligns to the system page
	}
	// Reserve a heap page more and give back what lies outside the aligned n.
	p, err := osmem.Reserve(n + pageSize)
	if err != nil {
		return nil, err
	}
	a := uintptr(p)
	head := -a & (pageSize - 1)
	if head > 0 {
		osmem.Unmap(p, head)
	}
	if tail := pageSize - head; tail > 0 {
		osmem.Unmap(ptr(a+head+n), tail)
	}
	return ptr(a + head), nil
}

// unmapRegion gives back a region mapRegion made, and its guards.
func unmapRegion(p unsafe.Pointer, n uintptr) error {
	return osmem.Unmap(unsafe.Add(p, -regionGuard), n+2*regionGuard)
}

// commitRegion makes [p, p+n) of a region readable and writable.
func commitRegion(p unsafe.Pointer, n uintptr) error { return osmem.Commit(p, n) }

// protectRegion makes [p, p+n) of a region fault on any access, keeping its
// contents (guard pages: guard.go); commitRegion undoes it.
func protectRegion(p unsafe.Pointer, n uintptr) error { return osmem.Protect(p, n) }
