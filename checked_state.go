package offheap

// The checker's state, one per checked or sampled heap. Its methods live
// with the parts of checked mode they serve: records, quarantine, reports,
// guard pages.

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// checker is checked mode's state for one heap.
type checker struct {
	h     *Heap
	id    uint64 // the heap's identity: keys seals and canaries
	all   bool   // every allocation is checked; false: a sampled fast heap
	guard bool   // every checked allocation gets guard pages
	rate  uint64 // Options.GuardOneIn

	// The record table: region 0's part, found with one
	// compare against base and size; a later region's is its shadow.
	base, size uintptr
	table      unsafe.Pointer
	pmap       unsafe.Pointer // h.pmap, one load closer

	q quarantine

	found      found                     // the memory errors it found
	closeLeaks atomic.Pointer[LeakError] // the leaks Close found, for Heap.Leaks

	runMu sync.Mutex
	// The pool of a sampled heap: the guarded runs in [poolBase,
	// poolEnd), mapped at NewHeap. Under runMu: free holds the runs not in
	// use, the longest free first (a FIFO of free[head:head+n], modulo
	// poolSlots); last, per run, the start of the freed block whose record
	// it keeps until the run is used again.
	pool struct {
		base, end uintptr
		free      [poolSlots]uintptr
		head, n   int
		last      [poolSlots]uintptr
	}
	// spareRuns are the first pages of one-page guarded runs that left the
	// quarantine, kept inaccessible for the next guarded block.
	spareRuns []uintptr
}
