package offheap

import (
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
// not a copy of the bytes, and no more memory than the block's growth.
// Moved pages cost the process kernel mappings while they stay (Linux
// limits them: vm.max_map_count), so a heap moves the pages of a few
// blocks at a time and copies the others. A
// small block moves as Alloc and Free would move it by hand, through the
// P's magazine. Only what the new block must zero is cleared: never what
// is copied over, nor pages fresh from the system, which read as zeros
// already. A checked heap always copies, so that a stale use of b is
// caught. Where the bytes past b's are to be overwritten anyway,
// ReallocUnzeroed skips the zeroing.
//
// b is the block it starts whatever its length, as for Free: a b of
// capacity 0 (nil, or Alloc(0)'s) is no block, and Realloc(nil, n) is
// Alloc(n); Realloc(b[:0], n) resizes b's block and keeps none of its bytes.
// Realloc(b, 0) frees b and returns an empty slice. Realloc panics as Alloc
// does when the new block cannot be had, and as Free does when b is not a
// block of this heap (memory of an Arena or a Shared included); either way b
// is left as it was and nothing is allocated.
func (h *Heap) Realloc(b []byte, n int) []byte {
	return h.realloc(b, n, true)
}

// ReallocUnzeroed is Realloc without the zeroing, as AllocUnzeroed is
// Alloc without it, for callers that overwrite the bytes they add: it
// returns n bytes whose first min(len(b), n) are b's and whose rest are
// whatever the memory last held. It resizes, moves, checks and panics as
// Realloc does; ReallocUnzeroed(nil, n) is AllocUnzeroed(n).
func (h *Heap) ReallocUnzeroed(b []byte, n int) []byte {
	return h.realloc(b, n, false)
}

// realloc is Realloc, or with zero false ReallocUnzeroed.
func (h *Heap) realloc(b []byte, n int, zero bool) []byte {
	if cap(b) == 0 {
		if zero {
			return h.Alloc(n)
		}
		return h.AllocUnzeroed(n)
	}
	if n == 0 {
		h.Free(b)
		return []byte{}
	}
	// A slice longer than maxSmall cannot be a small block's: the slow path
	// at once, which saves a large block the look (BenchmarkReallocPairs,
	// from 1 MiB to 64 KiB).
	if 0 < n && n <= maxSmall && cap(b) <= maxSmall {
		if nb := h.reallocSmall(b, n, zero); nb != nil {
			return nb
		}
	}
	return h.reallocSlow(b, n, zero)
}

// reallocSmall is Realloc's fast path, for a small block of a fast heap
// resized to n <= maxSmall bytes: in place when a block for n bytes is of
// its class, otherwise moved to a block from the P's magazine, b's block
// going onto the magazine as Free's fast path puts it there. All of it is
// one pinned section that saw the heap open (closing.go), so Close cannot
// unmap either block meanwhile; the copy and the clear together write at
// most maxSmall bytes, what allocFast clears while pinned. It returns nil,
// having changed nothing, where the slow path must decide: b is no block
// start of the first region's small classes, or holds the double-free key
// (doublefree.go), the magazine cannot serve the new block or take b's, or
// the profile samples this allocation (pop declines it).
func (h *Heap) reallocSmall(b []byte, n int, zero bool) []byte {
	a := addrOf(b)
	off := a - h.base
	pid := pin.Pin()
	if h.closed.Load() || off >= atomic.LoadUintptr(&h.fastSize) {
		pin.Unpin()
		return nil
	}
	e := *h.pages.entry(uint32(off >> pageShift))
	c := uint8(e)
	if c-1 >= numClasses-1 || !blockStart(a, e, &classInfos[c]) || (c != 1 && *(*uint64)(ptr(a + 8)) == h.key) {
		pin.Unpin()
		return nil
	}
	if sizeClass(n) == c {
		nb := bytesAt(a, n)
		if zero && n > len(b) {
			clear(nb[len(b):])
		}
		pin.Unpin()
		return nb
	}
	m := h.mag(pid)
	if m == nil || m.cls[c].n >= m.cls[c].cap {
		pin.Unpin()
		return nil
	}
	na := m.pop(sizeClass(n))
	if na == 0 {
		pin.Unpin()
		return nil
	}
	nb := bytesAt(na, n)
	if n > 8 {
		(*[2]uint64)(ptr(na))[1] = 0 // the key, where the copy may not reach (doublefree.go)
	}
	k := copy(nb, b)
	if zero {
		clear(nb[k:])
	}
	if c != 1 {
		*(*uint64)(ptr(a + 8)) = h.key // b's block is free (Free's fast path)
	}
	m.put(c, a) // room checked above
	pin.Unpin()
	return nb
}

// reallocSlow is every Realloc reallocSmall did not do: large blocks, a
// checked heap's, the profile's and the guard pages' samples, small blocks
// the magazine cannot move, and what Free would refuse.
func (h *Heap) reallocSlow(b []byte, n int, zero bool) []byte {
	if !h.enter() {
		panic(closedError(reallocName(zero)))
	}
	defer h.exit()
	a := addrOf(b)
	if h.checked() { // the checker's blocks: always a copy (checked.go)
		return h.reallocCopy(b, n, zero)
	}
	old, onp := h.pages.ownRun(a) // realloc_pages.go
	if old != classLarge {
		h.checkNotFree(b, zero) // a large run is allocated: its first page says so
	}
	if n > maxSmall {
		if np, ok := pagesFor(n); old == classLarge && ok && np == onp {
			nb := bytesAt(a, n) // as it is: the same pages
			if zero && n > len(b) {
				clear(nb[len(b):])
			}
			return nb
		}
		return h.reallocLarge(b, n, zero, old, onp) // realloc_pages.go
	}
	if old != classLarge {
		return h.reallocCopy(b, n, zero) // a small block, a sample, or no block of this heap at all
	}
	nb := h.AllocUnzeroed(n)
	k := copy(nb, b)
	if zero {
		clear(nb[k:])
	}
	h.freeLarge(a, classLarge) // Free's slow path, without its enter: this one's
	return nb
}

// reallocCopy moves b's bytes to a new block of n bytes and frees b as Free
// does.
func (h *Heap) reallocCopy(b []byte, n int, zero bool) []byte {
	nb := h.AllocUnzeroed(n)
	k := copy(nb, b)
	if zero {
		clear(nb[k:])
	}
	h.freeOld(b, nb)
	return nb
}

// reallocName is the call Realloc's panics name.
func reallocName(zero bool) string {
	if zero {
		return "Realloc"
	}
	return "ReallocUnzeroed"
}

// checkNotFree panics, as Free would, unless a fast heap's b is a block
// Free takes (freeable, place.go), before Realloc allocates: a free block
// could be the new block itself, and a refused one costs no allocation. (A
// checked heap never hands out a block that waits in its quarantine, and
// its Free refuses the rest.) Called between enter and exit.
func (h *Heap) checkNotFree(b []byte, zero bool) {
	if h.checked() {
		return
	}
	a := addrOf(b)
	switch p := h.freeable(a); p.kind {
	case placeSmall, placeRun, placeGuarded: // a guarded block: the checker's Free judges it
	default:
		panic(p.refusal(reallocName(zero), a, cap(b)))
	}
}
