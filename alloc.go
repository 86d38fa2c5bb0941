package offheap

// Alloc and its variants: the fast path (a pop from the P's magazine) and
// the slow path, which serves everything else and is where checked mode,
// sampling and the limit's reclaim come in.

import (
	"fmt"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/pageheap"
	"github.com/offheap/offheap/internal/pin"
)

// Alloc returns n zeroed bytes with len and cap n, aligned to 16 bytes (8 for
// n <= 8). It panics with an error whose message starts "offheap:" if n is
// negative, the limit is reached or the heap is closed; TryAlloc returns that
// error instead. Alloc(0) returns an empty, non-nil slice that Free ignores.
//
//go:nosplit
func (h *Heap) Alloc(n int) []byte {
	if a := h.allocFast(n); a != 0 {
		return bytesAt(a, n)
	}
	b, err := h.allocSlow(n, true, kindHeap)
	if err != nil {
		panic(err)
	}
	return b
}

// AllocUnzeroed is Alloc without the zeroing, for callers that overwrite
// every byte: the contents are whatever the block last held.
//
//go:nosplit
func (h *Heap) AllocUnzeroed(n int) []byte {
	if a := h.allocFastUnzeroed(n); a != 0 {
		return bytesAt(a, n)
	}
	b, err := h.allocSlow(n, false, kindHeap)
	if err != nil {
		panic(err)
	}
	return b
}

// allocFastUnzeroed is allocFast for a block left as it is: it pops a
// block for a small request from the current P's magazine and clears
// only its double-free key, or returns 0.
//
//go:nosplit
func (h *Heap) allocFastUnzeroed(n int) uintptr {
	if uint(n)-1 >= maxSmall || n <= 8 || h == nil { // an 8-byte block has no word for the key: zeroing it costs no more
		return h.allocFast(n)
	}
	c := sizeClass(n)
	a := uintptr(0)
	if m := h.mag(pin.Pin()); m != nil {
		a = m.popUnzeroed(c, n)
	}
	pin.Unpin()
	return a
}

// allocShared is Alloc for a Shared's block, which the profile labels
// kind=shared.
func (h *Heap) allocShared(n int) []byte {
	if a := h.allocFast(n); a != 0 {
		return bytesAt(a, n)
	}
	b, err := h.allocSlow(n, true, kindShared)
	if err != nil {
		panic(err)
	}
	return b
}

// TryAlloc is Alloc returning an error instead of panicking: errors.Is(err,
// ErrLimit), ErrClosed, ErrSize or ErrAddressSpace.
func (h *Heap) TryAlloc(n int) ([]byte, error) {
	if a := h.allocFast(n); a != 0 {
		return bytesAt(a, n), nil
	}
	return h.allocSlow(n, true, kindHeap)
}

// TryAllocUnzeroed is AllocUnzeroed returning an error instead of
// panicking, as TryAlloc is Alloc's.
func (h *Heap) TryAllocUnzeroed(n int) ([]byte, error) {
	if a := h.allocFastUnzeroed(n); a != 0 {
		return bytesAt(a, n), nil
	}
	return h.allocSlow(n, false, kindHeap)
}

// allocFast pops a block for a small request from the current P's magazine
// and zeroes it, or returns 0. This and Free's first half are the fast
// path: read them top to bottom.
//
// The fast path's functions (Alloc, AllocUnzeroed, allocFast, Free) are
// nosplit: no stack check in their prologue, which the linker allows since
// their frames are small and every call they make is nosplit or a slow path
// that checks its own; and no safe point before that call, which Free needs
// (see there).
//
//go:nosplit
func (h *Heap) allocFast(n int) uintptr {
	if uint(n)-1 >= maxSmall || h == nil {
		return 0 // 0, negative or large; a nil heap, for allocSlow to refuse unpinned
	}
	c := sizeClass(n)
	a := uintptr(0)
	if m := h.mag(pin.Pin()); m != nil {
		// Zeroed while pinned, since a racing Close may unmap the block
		// once we are not: at most maxSmall bytes, which is
		// what the runtime itself clears between preemption points.
		a = m.popZeroed(c, n)
	}
	pin.Unpin()
	return a
}

// allocSlow serves every Alloc the fast path did not: an empty magazine,
// magazines off, a large or odd size, a closed heap, a sample. The profile
// labels a sampled block kind.
func (h *Heap) allocSlow(n int, zero bool, kind sampleKind) ([]byte, error) {
	switch {
	case !h.made():
		return nil, errUnmade
	case h.closed.Load():
		return nil, ErrClosed
	case n < 0:
		return nil, fmt.Errorf("%w: negative size %d", ErrSize, n)
	case n == 0:
		return []byte{}, nil
	}
	var cl uint8 // a small request's class; 0 for a large one
	if n <= maxSmall {
		cl = sizeClass(n)
	}
	// A refusal by the limit is tried once more after the heap gets back
	// the free memory it keeps.
	var rc reclaimTry
	checked := h.checked()
	var guard, prof bool
	switch {
	case checked: // the checker takes them all
	case !h.mags.on && cl != 0 && !h.hasChecker():
		// Magazines off: every Alloc comes here, and reads its central
		// list's mark without a call.
		cen := &h.central[cl]
		prof = cen.profDue.Load() && cen.takeSample(h.prof)
	default:
		guard, prof = h.sampleDue(n, cl) // sampling.go
	}
	if checked || guard {
		// The checker's allocations (all in checked mode, the sampled ones
		// otherwise), with the stack walked from this frame: it starts at
		// the caller of Alloc.
		var s stack
		return h.checkAlloc(n, zero, callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs))))
	}
	if prof {
		return h.allocProfiled(n, zero, kind)
	}
	for {
		var b []byte
		var err error
		switch {
		case cl == 0:
			b, err = h.allocBig(n, zero)
		default:
			var a uintptr
			if h.mags.on { // smallBlock, written out: a call fewer (BenchmarkPair64, arm=offheap-nomag)
				a, err = h.refill(cl)
			} else {
				a, err = h.central[cl].getOne(h)
			}
			if err == nil {
				if !h.prepare(a, n, zero) {
					return nil, ErrClosed
				}
				b = bytesAt(a, n)
			}
		}
		if err == nil {
			return b, nil
		}
		panicCorrupt(err)
		if !rc.again(h, n, err) {
			return nil, err
		}
	}
}

// allocProfiled allocates the n bytes of an allocation the profile samples,
// trying once more after a reclaim at the limit. The stack is
// walked from here; the profile trims offheap's own frames.
func (h *Heap) allocProfiled(n int, zero bool, kind sampleKind) ([]byte, error) {
	var s stack
	st := callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs)))
	var rc reclaimTry
	for {
		b, err := h.allocSampled(n, zero, st, kind)
		if err == nil || !rc.again(h, n, err) {
			return b, err
		}
	}
}

// prepare readies the n bytes at a that the central list handed out, unless
// the heap is closed: it zeroes them (the key too, as allocFast does), or
// with zero false clears only the key. A racing Close may have unmapped the
// block since the central lock was released, so prepare is nosplit, as
// Free, and sees the heap open before it touches the block:
// memclr is its only call, and is not preemptible.
//
//go:nosplit
//go:noinline
func (h *Heap) prepare(a uintptr, n int, zero bool) bool {
	if h.closed.Load() {
		return false
	}
	raceAcquire(ptr(a)) // race builds: after the block's last Free
	clearBlock(a, n, zero)
	return true
}

// allocBig serves a large block, between enter and exit: it may clear
// gigabytes, too long to hold a P pinned.
func (h *Heap) allocBig(n int, zero bool) ([]byte, error) {
	if !h.enter() {
		return nil, ErrClosed
	}
	defer h.exit()
	a, err := h.allocLarge(n, zero, pageheap.ClassLarge)
	if err != nil {
		return nil, err
	}
	return bytesAt(a, n), nil
}
