package offheap

import "sync/atomic"

// What Ref, Buffer and ReallocSlice need of the heap's internals, in one
// place (where a block starts and how long it is is placeOf's, place.go):
// the size of the block an allocation gets, and how an address becomes the
// compact offset a Ref stores and back. Each function states its contract; they read the
// regions, the pagemap and classInfos. When the
// address space or the classes change, these change, and nothing that
// calls them does.

// refOffset is address a as a Ref stores it: its compact offset in h's
// address space, below refMax, and the same for as long as the memory at a
// stays part of the heap (a Ref outlives the call that made it). The offset
// is a's place in the page heap's virtual page space: the
// virtual page times pageSize plus a's offset in its page, so that region
// 0's offsets are a - h.base. ok is false when a is not in h's address
// space.
func (h *Heap) refOffset(a uintptr) (off uint64, ok bool) {
	p, ok := h.pages.PageOf(a)
	off = uint64(p)<<pageShift | uint64(a&(pageSize-1))
	return off, ok && off < refMax
}

// refAddr is refOffset's inverse for a range: the address of compact offset
// off, and whether all n bytes from it lie in one region of h's address
// space. It is false for the offsets no block of h can have (a gap page,
// past the last region, or a range running out of its region), so that a
// forged, corrupted or foreign Ref never resolves to memory outside the
// heap.
func (h *Heap) refAddr(off, n uint64) (uintptr, bool) {
	p := off >> pageShift
	if p >= uint64(h.pages.MaxPages) {
		return 0, false
	}
	r := h.pages.Regions.Load().Holding(uint32(p))
	if r == nil {
		return 0, false
	}
	o := off - uint64(r.First)<<pageShift
	return r.Base + uintptr(o), n <= uint64(r.Bytes)-o
}

// refFast is Bytes' fast path: the address of compact offset off and true
// when the n > 0 bytes from it lie in the part of the address space whose
// Refs resolve without a look at the block. That part is all of it in a fast
// heap, and none in a heap that checks every block (its Frees take the slow
// path too: h.fastSize is 0) or after Close (h.fastSize is 0), so those
// Refs go to bytesSlow. One compare, no call: it must inline into Bytes.
func (h *Heap) refFast(off, n uint64) (uintptr, bool) {
	return h.base + uintptr(off), off+n-1 < uint64(atomic.LoadUintptr(&h.fastSize)) // Close stores it atomically
}

// tryAllocUnzeroed is AllocUnzeroed returning the error instead of
// panicking, for Buffer, whose writes report a full heap as an error.
func (h *Heap) tryAllocUnzeroed(n int) ([]byte, error) {
	if a := h.allocFast(n); a != 0 { // zeroed: Buffer's blocks are not hot enough for AllocUnzeroed's copy
		return bytesAt(a, n), nil
	}
	return h.allocSlow(n, false, kindHeap)
}
