package pageheap

import "github.com/offheap/offheap/internal/osmem"

// The heap's page is 8 KiB on every system: size classes, spans, runs and
// the pagemap count in it, so every layer reads these two, and they stand
// at the bottom.
const (
	PageShift = 13             // log2 of PageSize
	PageSize  = 1 << PageShift // the heap's page, in bytes
)

// The operating system's page, the unit of mmap, mprotect, madvise and
// mincore, is osmem.PageSize, read when the process starts: 4 KiB on amd64 and most
// arm64 systems, 16 or 64 KiB on some arm64 kernels. Where it is larger
// than a heap page, one call on a heap page would reach its neighbours in
// the same system page (or fail: mprotect and madvise refuse a start that
// is not page aligned), so every decision that reaches a system call on a
// region's memory is made on whole OS pages, osPageBytes long:
//
//   - regions start on an OS page and are whole OS pages long, and their
//     virtual pages start on a multiple of osPagePages, so that a virtual
//     page number's alignment is its address's;
//   - the frontier commits whole OS pages (Heap.fresh), and a run of an
//     OS page or more starts on one (Heap.alloc);
//   - a dirty free page goes back to the system only when every page of its
//     OS page is free and due: until then it is parked;
//   - a guarded block's run, its guard and the pool's slots are whole OS
//     pages, so that protecting one faults no neighbour;
//   - zeroing a large block gives back only the OS pages its run holds
//     whole (zeroResident).
//
// Where the OS page is at most a heap page, as on amd64, osPagePages is 1
// and each rule reads as a rule on heap pages.
var (
	// OSPageBytes is the OS page, or the heap page where that is larger.
	OSPageBytes = max(osmem.PageSize, PageSize)
	// OSPagePages is how many heap pages an OS page holds: a power of two.
	OSPagePages = uint32(OSPageBytes >> PageShift)
)

// OSPageUp rounds a count of heap pages up to whole OS pages.
func OSPageUp(n uint32) uint32 { return (n + OSPagePages - 1) &^ (OSPagePages - 1) }
