package offheap

// Relocate: moving a live block out of a sparse span into a denser one, so
// that a long-lived heap whose frees left every span with a few survivors
// can empty spans and give their pages back (docs/storing-values.md shows a
// pass over a cache).
//
// The span Relocate fills for a class (the target) is the fullest one with a
// free block, chosen when the previous one fills. Relocate takes the new
// block from it directly, past the magazines and the depot, and puts b
// straight back on its span's free list, so that a sparse span empties as
// its blocks move and its pages go back to the page heap, and to the
// operating system at the next Trim or release. Large blocks and sampled
// blocks are page runs of their own, whose pages go back whole when they
// are freed: moving them gives nothing back.
//
// Each class keeps a summary of whether any of its blocks can move
// (relocClass): a pass that converged leaves none that can. Where none can,
// a block costs a pagemap lookup, which also refuses what Free refuses, and
// a load of the summary; where one can, a block whose span is fuller than
// half costs a look at its span as well. Neither takes a lock or writes.
// Only a freed small block of a class with nothing to move, or of a span
// that is not sparse, comes back as it is: Relocate then reads its pagemap
// word, not the block.
//
// The handles that can move: a slice from Alloc (store the Ref of the
// slice Relocate returns); a block allocated through a Local, which goes
// back to its span, not to the Local; a Buffer's block, through
// Buffer.Relocate. A Shared's bytes cannot move while retained, and Arena
// memory is freed only all at once. In checked mode every small block
// moves, as Realloc's do, through the checker's Alloc and Free: b's later
// use is reported with Relocate's stack as the free stack, and the checker
// places the new block where it will, so a checked pass finds stale handles
// and gives no memory back. A fast heap's move takes no new memory.

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pageheap"
)

// Relocate moves b's bytes to a block in a denser span and frees b, when b's
// span is sparse enough that moving helps; it returns the slice to use and
// whether it moved (it moved: b must not be used again; it did not: nb is
// b). Run it over the values a program keeps after eviction left spans
// sparse, so that emptied spans go back to the system; Stats.SpanFreeBytes
// says how much such spans hold, and Trim first makes cached free blocks
// count as free.
//
// Large blocks and the profile's samples never move. A Shared's bytes and
// Arena memory panic, as in Free. A move counts in Stats.Relocations. In
// checked mode every small block moves, so stale handles are reported.
// Relocate is safe for concurrent use, but not with another call that frees
// or moves b; RelocateAll moves a batch for less.
//
//go:nosplit
//go:noinline
func (h *Heap) Relocate(b []byte) (nb []byte, moved bool) {
	if cap(b) == 0 {
		return b, false
	}
	// The dense check: a block of a fast heap's first region whose class
	// has nothing to move or whose span is not sparse stays where it is,
	// without a lock, without reading the block, and without the checks
	// the rest of Relocate makes (a freed block there, which Free would
	// refuse, is returned as it is). A closed heap's blocks and a checked
	// heap's, whose fastSize is 0, go to relocate. Relocate is nosplit, as
	// Free is: up to its call of relocate, a stop of the world waits for
	// it as for a pinned section, so the pagemap and the span, read after
	// fastSize was seen nonzero (Close zeroes it, then quiesces), stay
	// mapped meanwhile. That saves the pin, a third of a
	// pass's cost over a heap with nothing to move.
	a := addrOf(b)
	if off := a - h.base; off < atomic.LoadUintptr(&h.fastSize) {
		e := pageheap.PageWordAt(h.pmap, off>>pageShift)
		if c, ok := smallStart(a, e); ok && (!h.central[c].movable.Load() ||
			!sparseSpan(spanLive(spanAt(&h.pages, pageheap.WordSpan(e))), classInfos[c].blocks)) {
			return b, false
		}
	}
	return h.relocate(b)
}

// relocate is Relocate of a block its dense check did not answer for: it
// moves it, or says why not. What it takes and what it refuses is Free's
// decision (freeable), so that it never moves or keeps a block
// Free would refuse.
func (h *Heap) relocate(b []byte) ([]byte, bool) {
	a := addrOf(b)
	if h.checked() {
		return h.relocateChecked(b)
	}
	// The pagemap, the span and the blocks are read between enter and exit:
	// Close unmaps them.
	if !h.enter() {
		panic(closedError("Relocate"))
	}
	defer h.exit()
	p := h.freeable(a)
	switch p.kind {
	case placeSmall:
	case placeRun: // a large block or a live sample: never moved
		return b, false
	case placeGuarded:
		if h.hasChecker() { // a sampled heap's sample: the checker's
			h.checkRecordRef(a, 1, "Relocate") // panics unless a starts a live block
			return b, false
		}
		fallthrough
	default:
		panic(p.refusal("Relocate", a, cap(b)))
	}
	if uint(cap(b)) > uint(p.size) {
		panic(fmt.Sprintf("offheap: Relocate of %d bytes at %#x, past the end of its %d-byte block: Relocate moves a slice Alloc returned, or a prefix of one", cap(b), a, p.size))
	}
	cen := &h.central[p.class]
	cen.mu.Lock()
	na, err := cen.relocate(h, spanAt(&h.pages, p.span), a, cap(b))
	cen.mu.Unlock()
	if err != nil {
		panic(err.Error()) // the lock released, b as it was
	}
	if na == 0 {
		return b, false
	}
	return bytesAt(na, cap(b))[:len(b)], true
}

// relocate moves the n bytes of the live block at a, of span s, to a block
// of the span Relocate fills, and frees a to s; it returns the new block, or
// 0 when moving would not help (s is not sparse, or no fuller span has a
// free block) or the heap is closed. A corrupt free list in the target
// is abandoned and returned as err, a not moved; the caller
// panics with it once the lock is released, as Alloc does. Called with mu
// held, between enter and exit.
func (c *central) relocate(h *Heap, s *span, a uintptr, n int) (uintptr, *corruptError) {
	if h.closed.Load() {
		return 0, nil
	}
	blocks := classBlocks[c.class]
	live := s.carved - s.nfree
	if !sparseSpan(live, blocks) {
		return 0, nil
	}
	t := c.target(h, s, live)
	if t == nil {
		return 0, nil
	}
	// t holds more live blocks than s, which holds a: it is not empty.
	k := t.relocKind()
	na, carved, ok := t.take(&h.links, h.key)
	if !ok {
		return 0, c.abandon(h, t, na) // take changed nothing
	}
	c.spanFree--
	if t.exhausted() {
		c.unlink(h, t) // and no longer the target: the next move chooses another
	}
	c.recount(&h.pages, t, k)
	raceAcquire(ptr(na)) // race builds: take released it to its next owner, this goroutine
	if c.class != 1 {
		*(*uint64)(ptr(na + 8)) = 0 // the double-free key, in case n leaves it
	}
	copy(bytesAt(na, n), bytesAt(a, n))
	raceRelease(ptr(a)) // as in Free
	c.putLocked(h, a)   // which writes the key, as Free's path does
	if carved {
		c.fresh.Add(1)
	} else {
		c.hits.Add(1)
	}
	c.frees.Add(1)
	c.moved.Add(1)
	return na, nil
}

// relocateChecked is Relocate in checked mode: every small block moves,
// through the checker's Alloc and Free, so that a stale use of b is
// caught; Free refuses what it refuses, and the new block goes back. Where
// the heap has no memory for the new block, b stays.
func (h *Heap) relocateChecked(b []byte) ([]byte, bool) {
	n := cap(b)
	// The checker vouches for b first: before its bytes are read (a freed
	// block's may be inaccessible), and before a large block is kept where
	// it is, so that what Free would refuse panics here as in a fast heap.
	func() {
		if !h.enter() {
			panic(closedError("Relocate"))
		}
		defer h.exit()
		h.checkRecordRef(addrOf(b), uint64(n), "Relocate")
	}()
	if n > maxSmall {
		return b, false
	}
	// From allocSlow, where every checked allocation goes, so that the
	// block's stack starts at the caller of Relocate, and a heap at its
	// Limit leaves b where it is, as a fast heap's Relocate, which takes
	// no new memory, does.
	nb, err := h.allocSlow(n, false, kindHeap)
	if errors.Is(err, ErrClosed) {
		panic(closedError("Relocate"))
	} else if err != nil {
		return b, false
	}
	copy(nb, b[:n])
	freed := false
	defer func() {
		if !freed { // b was not a block of h: Free panicked, give nb back
			h.Free(nb)
		}
	}()
	h.Free(b)
	freed = true
	h.central[sizeClass(n)].moved.Add(1)
	return nb[:len(b)], true
}

// Relocate moves the buffer's block as Heap.Relocate does, keeping its
// bytes, and reports whether it moved. Slices that Bytes returned before
// are invalid once it has.
func (b *Buffer) Relocate() bool {
	if b.blk == nil {
		return false
	}
	nb, moved := b.h.Relocate(b.blk)
	b.blk = nb
	return moved
}
