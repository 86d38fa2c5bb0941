package offheap

import (
	"fmt"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pageheap"
	"github.com/offheap/offheap/internal/pin"
)

// Realloc resizes the block that b starts, as C's realloc does: the first
// min(len(b), n) bytes are b's and the rest are zeroed, and b must not be
// used afterwards. Grow off-heap slices with it, not with append, which
// copies a full slice to the Go heap. Within b's block (UsableSize) the same
// memory comes back; a large block grows in place where it can, or moves its
// pages rather than copy them. A checked heap always copies, to catch a
// stale use of b.
//
// Realloc(nil, n) is Alloc(n), and Realloc(b, 0) frees b. Realloc panics as
// Alloc does when the new block cannot be had (TryRealloc returns the
// error), and as Free does when b is no block of this heap; either way b is
// left as it was.
func (h *Heap) Realloc(b []byte, n int) []byte {
	return h.realloc(b, n, true)
}

// ReallocUnzeroed is Realloc without the zeroing, for callers that overwrite
// the bytes they add: the bytes past min(len(b), n) are whatever the memory
// last held.
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
// one pinned section that saw the heap open, so Close cannot
// unmap either block meanwhile; the copy and the clear together write at
// most maxSmall bytes, what allocFast clears while pinned. It returns nil,
// having changed nothing, where the slow path must decide: b is no block
// start of the first region's small classes, or holds the double-free key,
// the magazine cannot serve the new block or take b's, or
// the profile samples this allocation (pop declines it).
func (h *Heap) reallocSmall(b []byte, n int, zero bool) []byte {
	a := addrOf(b)
	off := a - h.base
	pid := pin.Pin()
	if h.closed.Load() || off >= atomic.LoadUintptr(&h.fastSize) {
		pin.Unpin()
		return nil
	}
	c, ok := smallStart(a, pageheap.PageWordAt(h.pmap, off>>pageShift))
	if !ok || h.keyed(a, c) {
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
	if m == nil || !m.room(c) {
		pin.Unpin()
		return nil
	}
	na := m.popUnzeroed(sizeClass(n), n) // the key cleared, where the copy may not reach
	if na == 0 {
		pin.Unpin()
		return nil
	}
	nb := bytesAt(na, n)
	k := copy(nb, b)
	if zero {
		clear(nb[k:])
	}
	h.claim(a, c) // b's block is free (Free's fast path); its key was not there
	m.put(c, a)   // room checked above
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
	if h.checked() { // the checker's blocks: always a copy
		h.vouch(b)
		return h.reallocCopy(b, n, zero)
	}
	// What Free refuses is refused before anything is allocated: a free
	// block could be the new block itself, and a refused one costs no
	// allocation. old and onp are a run of its own's class and pages, a
	// large block or a profile's sample, which Realloc may resize.
	var old uint8
	var onp uint32
	switch p := h.freeable(a); p.kind {
	case placeRun:
		old, onp = p.class, uint32(p.size>>pageShift)
	case placeSmall:
	case placeGuarded:
		if !h.hasChecker() {
			panic(p.refusal(reallocName(zero), a, cap(b)))
		}
		h.vouch(b) // a sampled heap's sample, copied below
	default:
		panic(p.refusal(reallocName(zero), a, cap(b)))
	}
	if n > maxSmall {
		if np, ok := pagesFor(n); old == pageheap.ClassLarge && ok && np == onp {
			nb := bytesAt(a, n) // as it is: the same pages
			if zero && n > len(b) {
				clear(nb[len(b):])
			}
			return nb
		}
		return h.reallocLarge(b, n, zero, old, onp) // realloc_pages.go
	}
	if old != pageheap.ClassLarge {
		return h.reallocCopy(b, n, zero) // a small block, a sample, or no block of this heap at all
	}
	nb := h.AllocUnzeroed(n)
	k := copy(nb, b)
	if zero {
		clear(nb[k:])
	}
	h.freeLarge(a, pageheap.ClassLarge) // Free's slow path, without its enter: this one's
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

// vouch has Free refuse b unless the checker has a live block at its
// start, before Realloc reads it: a freed sample's page is inaccessible,
// and the copy would fault. Free's refusal, with its message and stacks,
// is Realloc's. Called between enter and exit, for a block the checker
// judges (every block of a checked heap, a sampled heap's guarded ones).
func (h *Heap) vouch(b []byte) {
	if !h.checkLive(addrOf(b)) {
		h.Free(b) // which panics: b is no live block
		panic(fmt.Sprintf("offheap: internal error: Free took the block at %#x, which the checker does not have live", addrOf(b)))
	}
}
