package offheap

import (
	"fmt"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pin"
)

// Realloc resizes the block that b starts, as C's realloc does. It returns n
// bytes whose first min(len(b), n) are b's and whose rest are zeroed, and b
// must not be used afterwards. Grow off-heap buffers with it, not with
// append: append on a full slice copies it to a new array on the Go heap.
//
// When a block for n bytes would be the same size as b's block (the same
// size class, or the same number of pages), the same memory comes back and
// nothing is copied. A large block (more than 256 KiB) is resized in place
// where it can be: shrunk, it gives the pages past its new end back to the
// system at once; grown, it takes the free pages right after it. Otherwise
// the bytes move to a new block and b's block is freed, and a large block's
// pages move with them (mremap, on Linux): the move costs page-table work,
// not a copy of the bytes, and no more memory than the block's growth. Only
// what the new block must zero is cleared, never what is copied over. A
// checked heap always copies, so that a stale use of b is caught.
//
// b is the block it starts whatever its length, as for Free: a b of
// capacity 0 (nil, or Alloc(0)'s) is no block, and Realloc(nil, n) is
// Alloc(n); Realloc(b[:0], n) resizes b's block and keeps none of its bytes.
// Realloc(b, 0) frees b and returns an empty slice. Realloc panics as Alloc
// does when the new block cannot be had, and as Free does when b is not a
// block of this heap (memory of an Arena or a Shared included); either way b
// is left as it was and nothing is allocated.
func (h *Heap) Realloc(b []byte, n int) []byte {
	if cap(b) == 0 {
		return h.Alloc(n)
	}
	if n == 0 {
		h.Free(b)
		return []byte{}
	}
	a := addrOf(b)
	if 0 < n && n <= maxSmall {
		// In place, pinned with the heap seen open, as Free's fast path:
		// Close cannot unmap the block meanwhile (closing.go).
		pin.Pin()
		if !h.closed.Load() && h.keeps(a, n) {
			nb := resizeInPlace(b, n)
			pin.Unpin()
			return nb
		}
		pin.Unpin()
	}
	if !h.enter() {
		panic(closedError("Realloc"))
	}
	defer h.exit()
	if n > maxSmall && h.keeps(a, n) {
		return resizeInPlace(b, n)
	}
	h.checkNotFree(a)
	if n > maxSmall && !h.checked() {
		return h.reallocLarge(b, n) // realloc_pages.go
	}
	nb := h.AllocUnzeroed(n)
	k := copy(nb, b)
	clear(nb[k:])
	h.freeOld(b, nb)
	return nb
}

// checkNotFree panics, as Free would, if a fast heap's block at a is free,
// before Realloc allocates: the new block could be that very block. (Free
// says what else is wrong with a; a checked heap never hands out a block
// that waits in its quarantine.) Called between enter and exit.
func (h *Heap) checkNotFree(a uintptr) {
	if h.checked() {
		return
	}
	page, ok := h.pages.pageOf(a)
	if !ok {
		return
	}
	e := *h.pages.entry(page)
	switch c := uint8(e); {
	case c == 0:
		panic(fmt.Sprintf("offheap: Realloc of %#x, which is not allocated (already freed, or never handed out)", a))
	case c-1 < numClasses-1 && c != 1:
		if _, into := blockIn(a, e, &classInfos[c]); into == 0 && *(*uint64)(ptr(a + 8)) == h.key {
			h.checkFree(a, c) // the key: free, or live data that holds it
		}
	}
}

// resizeInPlace is b's block as n bytes, those past len(b) zeroed.
func resizeInPlace(b []byte, n int) []byte {
	nb := bytesAt(addrOf(b), n)
	if n > len(b) {
		clear(nb[len(b):])
	}
	return nb
}

// keeps reports whether the block of a fast heap that starts at a is the
// size a block for n bytes would be, so that Realloc can hand it back as it
// is. It is false for anything Free would refuse, for a block that holds the
// double-free key, and for a block the checker owns: every block of a
// checked heap (its fastSize is 0), the guarded ones of a sampled heap
// (their class is neither large nor small). The block is the caller's, so
// its pagemap entry cannot change meanwhile.
func (h *Heap) keeps(a uintptr, n int) bool {
	off := a - h.base
	if off >= atomic.LoadUintptr(&h.fastSize) {
		return false
	}
	e := *h.pages.entry(uint32(off >> pageShift))
	switch c := uint8(e); {
	case c == classLarge:
		np, ok := pagesFor(n)
		// The first page of a run holds its length; a later page has 1<<8.
		return ok && n > maxSmall && uint32(e)>>8 == 0 && off&(pageSize-1) == 0 && uint32(e>>32) == np
	case c-1 < numClasses-1:
		// A block whose second word holds the double-free key (doublefree.go)
		// is probably free: Realloc moves it, and its Free says.
		return blockStart(a, e, &classInfos[c]) && n <= maxSmall && sizeClass(n) == c &&
			(c == 1 || *(*uint64)(ptr(a + 8)) != h.key)
	}
	return false
}

// appendMoved is what Free says of an address no heap owns: the usual way
// to get one is to append to a full off-heap slice.
const appendMoved = "if it came from Alloc and append grew it, append copied it to the Go heap, " +
	"which Free cannot take; grow off-heap blocks with Realloc, not append (a block of another heap goes back to that heap)"
