//go:build !race

package pageheap

import (
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// A region's memory comes from the operating system: address space reserved
// with mmap, committed in runs as the page heap needs it. (A race-detector
// build uses Go memory instead.)

// firstRegionSize is the size of the first region NewHeap reserves, for the
// size the heap would like: that size.
func firstRegionSize(want uintptr) uintptr { return want }

// regionAlign is the alignment of a region's base: a 2 MiB huge page, so that
// the huge-page ranges of a region are its own aligned stretches, and a
// multiple of every OS page. It costs address space only.
const regionAlign = 2 << 20

// regionsCollapse: a region's small pages can be collapsed into huge pages
// (collapseRegion).
const regionsCollapse = true

// MapRegion obtains n bytes of address space for a region, regionAlign
// aligned and inaccessible until committed (commitRegion), between two
// guards of regionGuard bytes. n is a multiple of osPageBytes.
func MapRegion(n uintptr) (unsafe.Pointer, error) {
	p, err := reserveAligned(n+2*RegionGuard, RegionGuard)
	if err != nil {
		return nil, err
	}
	return unsafe.Add(p, RegionGuard), nil
}

// reserveAligned reserves n bytes of address space whose byte at off is
// regionAlign aligned: it reserves an alignment more and gives back what
// lies outside. n and off are multiples of osPageBytes.
func reserveAligned(n, off uintptr) (unsafe.Pointer, error) {
	p, err := osmem.Reserve(n + regionAlign)
	if err != nil {
		return nil, err
	}
	a := uintptr(p)
	head := -(a + off) & (regionAlign - 1)
	if head > 0 {
		osmem.Unmap(p, head)
	}
	if tail := regionAlign - head; tail > 0 {
		osmem.Unmap(ptr(a+head+n), tail)
	}
	return ptr(a + head), nil
}

// UnmapRegion gives back a region mapRegion made, and its guards.
func UnmapRegion(p unsafe.Pointer, n uintptr) error {
	return osmem.Unmap(unsafe.Add(p, -RegionGuard), n+2*RegionGuard)
}

// CommitRegion makes [p, p+n) of a region readable and writable.
func CommitRegion(p unsafe.Pointer, n uintptr) error { return osmem.Commit(p, n) }

// ProtectRegion makes [p, p+n) of a region fault on any access, keeping its
// contents (guard pages); commitRegion undoes it.
func ProtectRegion(p unsafe.Pointer, n uintptr) error { return osmem.Protect(p, n) }

// MovePages moves the pages of [src, src+n) of a region to [dst, dst+n) of
// one, without copying a byte (osmem.Move): src then reads as zeros and
// holds no memory. On failure the caller copies; dst is usable unless the
// error is osmem.ErrLost.
func MovePages(dst, src unsafe.Pointer, n uintptr) error { return osmem.Move(dst, src, n) }

// renewRegion makes [p, p+n) of a region, committed, a new mapping that
// reads as zeros (osmem.Renew), so that the kernel merges it with its
// neighbours again after movePages split it off.
func renewRegion(p unsafe.Pointer, n uintptr) error { return osmem.Renew(p, n) }

// collapseRegion makes [p, p+n) of a region, huge-page aligned, huge pages
// now (osmem.Collapse).
func collapseRegion(p unsafe.Pointer, n uintptr) error { return osmem.Collapse(p, n) }
