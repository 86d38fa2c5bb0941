package offheap

// Free: the fast path (the block start checked against the pagemap, the
// double-free key, a push onto the P's magazine) and the slow path, which
// serves everything else, refuses what is not a block of this heap, and is
// where checked mode comes in.

import (
	"fmt"
	"sync/atomic"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/pageheap"
	"github.com/offheap/offheap/internal/pin"
)

// Free returns the block that b starts to the heap. b must start where a
// slice returned by this heap's Alloc started; its length does not matter
// (b[:0] frees the block), and a slice of capacity 0 is ignored. b must not
// be used afterwards. Free panics, leaving the heap intact, when b is not a
// live block of this heap: another heap's or Go memory, the inside of a
// block, an Arena's or a Shared's, or already free (docs/guide.md says what
// fast mode catches).
//
//go:nosplit
//go:noinline
func (h *Heap) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	a := addrOf(b)
	// Free is nosplit: up to its first call that can be preempted
	// (freeToCentral, freeSlow), a stop of the world waits for it as for a
	// pinned section. So the pagemap and the block, read after fastSize was
	// seen nonzero (Close zeroes it, then quiesces), stay mapped meanwhile.
	if off := a - h.base; off < atomic.LoadUintptr(&h.fastSize) {
		e := pageheap.PageWordAt(h.pmap, off>>pageShift)
		// Each test has its own branch to the slow path: as one
		// condition (ok && claim) the compiler merges the two into a
		// flag that it tests again, and that code's speed depends on
		// where in a 64-byte line the linker starts Free
		// (docs/benchmarks.md).
		c, ok := smallStart(a, e)
		if !ok {
			goto slow
		}
		// The key in the block's second word marks it freed: finding it
		// sends the Free to the slow path's exact check. An 8-byte
		// block has no key (claim).
		if c != 1 && !h.claimKey(a) {
			goto slow
		}
		raceRelease(ptr(a)) // race builds: to the block's next Alloc
		pid := pin.Pin()
		if m := h.mag(pid); m != nil && m.room(c) {
			m.add(c, a)
			pin.Unpin()
			return
		}
		pin.Unpin()
		h.freeToCentral(a, c) // a full or missing magazine, or magazines off
		return
	}
slow:
	h.freeSlow(b)
}

// freeSlow handles every Free the fast path did not take: every Free of a
// checked heap, which goes to the checker; large blocks, the profile's
// samples, a sampled heap's guarded blocks, small blocks of the regions
// after the first, the key found, a closed heap, and the
// addresses that are not a block start of this heap, which panic. Past
// checked mode it takes what freeable says is at a: the one
// decision of what Free, Realloc and Relocate take.
func (h *Heap) freeSlow(b []byte) {
	a := addrOf(b)
	if h.checked() {
		var s stack // walked from this frame: it starts at the caller of Free
		h.checkFree(a, callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs))))
		return
	}
	if !h.enter() {
		panic(fmt.Errorf("%w: Free of %#x", ErrClosed, a))
	}
	defer h.exit()
	switch p := h.freeable(a); p.kind {
	case placeSmall: // live: freeable found no key, or looked and found it nowhere free
		h.freeSmall(a, p.class)
	case placeRun:
		if p.class == pageheap.ClassSampled {
			h.freeSampled(a, p, cap(b)) // the profile's
		} else {
			h.freeLarge(a, pageheap.ClassLarge)
		}
	case placeGuarded:
		if h.hasChecker() { // a sampled heap's sample: the checker's
			var s stack // as above
			h.checkFree(a, callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs))))
			return
		}
		fallthrough
	default:
		panic(p.refusal("Free", a, cap(b)))
	}
}

// freeSmall frees the start a of a live block of class c, as freeable
// found it: the key written, and the block on its way to the magazine or
// the central list. Called between enter and exit.
func (h *Heap) freeSmall(a uintptr, c uint8) {
	h.claim(a, c)       // freeable found no key
	raceRelease(ptr(a)) // as in Free
	h.freeToCentral(a, c)
}
