package offheap

import (
	"fmt"
	"sync/atomic"
)

// Checked mode's side of Ref and Bytes: a handle is resolved only to a live
// block, read from the block's record without taking a lock for
// a small block, so a use after free is caught at the handle, before any of
// the block's bytes is read.

// checkRecordRef panics unless the n > 0 bytes at a are a live block the
// checker has (every block in checked mode, a sampled heap's guarded ones),
// or a prefix of one no longer than the length it was allocated with (the
// canary lies past it). A block freed and still in quarantine is a use
// after free: a *MemoryError of kind UseAfterFree with both stacks. op
// names the call.
func (h *Heap) checkRecordRef(a uintptr, n uint64, op string) {
	c := h.chk
	state, size, alloc, free, known := c.refRecord(a)
	switch {
	case known && state == stateLive:
		if n > uint64(size) {
			panic(fmt.Sprintf("offheap: %s of %d bytes at %#x, longer than the block's %d bytes%s", op, n, a, size, refHint))
		}
	case known && (state == stateFreed || state == stateFreeing):
		c.raise(&MemoryError{Kind: UseAfterFree, Addr: a, Size: size, AllocStack: stackText(alloc), FreeStack: stackText(free),
			detail: op + " of a freed block"})
	default:
		panic(fmt.Sprintf("offheap: %s of %#x (%d bytes), which %s%s", op, a, n, c.refUnknown(a), refHint))
	}
}

// refRecord reads the record of the block that starts at a: its state, the
// length it was allocated with and its stacks; known is false when no block
// starts at a. A small block's record is read without a lock, as Lookup
// reads it: the state with an atomic load, and the rest are only reported.
func (c *checker) refRecord(a uintptr) (state uint32, size int, alloc, free stackID, known bool) {
	start, _, r := c.blockOf(a)
	if r == nil || start != a {
		return 0, 0, 0, 0, false
	}
	state = atomic.LoadUint32(&r.state)
	return state, int(r.size), r.alloc, r.free, state != stateNone
}

// refUnknown says why no live block starts at a, completing "... of %#x,
// which ...".
func (c *checker) refUnknown(a uintptr) string {
	if c.h.pages.Contains(a) {
		if p := c.h.placeOf(a); p.kind == placeArena {
			return p.why(a) // as Free says it (checker.freeRun)
		}
		if start, _, _ := c.blockOf(a); start != 0 && start != a {
			return fmt.Sprintf("is not the start of a block: it is %s into the block at %#x", count(int(a-start), "byte"), start)
		}
		return "is not a live block of this heap (never handed out, or freed long ago and out of quarantine)"
	}
	if lookupHeap(a) != nil {
		return "this heap did not allocate: it belongs to another heap"
	}
	return "this heap did not allocate (Go memory, or a fast heap's)"
}

// liveAt reports whether a live block of the checker's starts at a
// (Heap.checkLive).
func (c *checker) liveAt(a uintptr) bool {
	state, _, _, _, known := c.refRecord(a)
	return known && state == stateLive
}
