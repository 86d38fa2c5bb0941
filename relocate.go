package offheap

// Relocate: moving a live block out of a sparse span into a denser one, so
// that a long-lived heap whose frees left every span with a few survivors
// can empty spans and give their pages back (docs/storing-values.md shows a
// pass over a cache).

import (
	"container/heap"
	"fmt"
	"math"
	"sync/atomic"
)

// Relocate moves b's bytes to a block in a denser span and frees b when b's
// span is sparse enough that moving helps; it returns the slice to use and
// whether it moved. When it moves, the new slice has b's length and capacity
// and holds b's bytes up to its capacity, and b must not be used afterwards;
// when it does not, it returns b itself and nothing happened. Use it in a
// defragmentation pass over the values a program keeps (their slices or
// Refs), after eviction left spans mostly empty: Stats.SpanFreeBytes says
// how much memory such spans hold beyond their live and cached blocks.
//
// A small block moves when its span holds at most half its blocks live
// (sparseSpan) and the span Relocate fills for the class is fuller than
// b's. That span is the fullest one with a free block, chosen when the
// previous one fills: Relocate takes the new block from it directly, past
// the magazines and the depot, and puts b straight back on its span's free
// list, so that a sparse span empties as its blocks move and its pages go
// back to the page heap (and to the operating system at the next Trim or
// release). Blocks the program freed count as live for their span while a
// magazine, a depot or a Cache holds them, so call Trim before a pass.
// Relocate keeps, per class, a summary of whether any block of the class can
// move (a pass that converged leaves none that can): where none can, a
// block costs Relocate a pagemap lookup, which also refuses what Free
// refuses, and a load of the summary; where one can, a block whose span is
// fuller than half costs a look at its span as well. Neither takes a lock
// or writes. Large blocks (above the largest size
// class, page runs of their own) and the blocks the profile sampled are
// never moved: their pages go back to the page heap whole when they are
// freed, so moving them gives nothing back.
//
// A move counts as an Alloc (a CentralHit, or Fresh when the new block is
// carved) and a Free of b's class, and in Stats.Relocations; InUseBytes and
// LiveBlocks do not change.
//
// Which handles can move: a slice from Alloc (or its Ref: store the Ref of
// the slice Relocate returns); a block allocated through a Cache, which
// goes back to its span, not to the Cache; a Buffer's block, with
// Buffer.Relocate. A Shared's bytes cannot move while it is retained, and
// Arena memory is freed only all at once: Relocate refuses both, panicking
// as Free does, as it does for anything Free refuses; only a freed block
// of a class with nothing to move, or of a span that is not sparse, comes
// back as it is, since Relocate then reads its pagemap word and not the
// block. In checked mode every small block moves,
// as Realloc's always do, and b is freed as Free frees it: a later use of
// b is reported as a use after free, with Relocate's stack as the free
// stack. The new block comes from the
// checker's allocator, which places it where it will: a checked pass finds
// stale handles and gives no memory back.
//
// A pass over many values costs less through RelocateAll, which moves a
// batch of them as Relocate moves each.
//
// Relocate is safe for concurrent use with every other call on the heap,
// but, like Free, not with another call that frees or moves b itself.
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
	// mapped meanwhile (closing.go). That saves the pin, a third of a
	// pass's cost over a heap with nothing to move.
	a := addrOf(b)
	if off := a - h.base; off < atomic.LoadUintptr(&h.fastSize) {
		e := *h.pages.entry(uint32(off >> pageShift))
		if c := uint8(e); c-1 < numClasses-1 {
			ci := &classInfos[c]
			if blockStart(a, e, ci) && (!h.central[c].movable.Load() ||
				!sparseSpan(spanLive(h.pages.span(uint32(e>>32))), ci.blocks)) {
				return b, false
			}
		}
	}
	return h.relocate(b)
}

// RelocateAll offers each slice of bs to Relocate and replaces it, in
// place, with the slice Relocate returns; it returns how many moved. A
// block moves or stays as Relocate would move or keep it, and each move is
// counted as Relocate counts it. A slice of capacity 0, such as nil, is
// skipped, so a pass can leave a hole for a value deleted since it was
// listed. Blocks that move
// keep their length and capacity; to store their Refs, take the Ref of every
// slice of bs afterwards (a block that stayed gives the Ref it had).
//
// RelocateAll is the faster way to run a pass: it enters the heap once, not
// once a block, looks each block up once, not twice, and makes consecutive
// moves of a class under one hold of the class's lock, which it lets go
// at least every 64 slices, so that another goroutine's Alloc of the class
// waits no longer than that. Hand it the values a pass visits in one call
// of the cache's lock, a thousand or so (docs/storing-values.md).
//
// A slice that Relocate refuses makes RelocateAll panic as Relocate does,
// with no lock held: the slices before it hold what Relocate returned for
// them, and it and the slices after it are as they were. On a closed heap
// it panics with an error that wraps ErrClosed. In checked mode, RelocateAll
// calls Relocate for each slice in turn.
//
// RelocateAll is safe for concurrent use with every other call on the heap,
// but not with another call that frees or moves a block of bs, nor with a
// use of bs itself.
func (h *Heap) RelocateAll(bs [][]byte) (moved int) {
	if len(bs) == 0 {
		return 0
	}
	if !h.enter() {
		panic(closedError("RelocateAll"))
	}
	// The pagemap, spans and blocks are read between enter and exit (as in
	// relocate); the deferred release frees a class lock held when an
	// entry's Relocate panics. A checked heap's fastSize is 0: each of its
	// blocks goes to Relocate.
	defer h.exit()
	var hold relocateHolder
	defer hold.release()
	fast := atomic.LoadUintptr(&h.fastSize)
	for i, b := range bs {
		hold.spend()
		if cap(b) == 0 {
			continue
		}
		a := addrOf(b)
		off := a - h.base
		var e uint64
		var c uint8
		if off < fast {
			e = *h.pages.entry(uint32(off >> pageShift))
			c = uint8(e)
		}
		// Only a block of a small class in the first region is moved here;
		// everything else, and whatever Relocate would refuse or look at
		// more closely (a block that holds the free key), goes to Relocate
		// itself, with no lock held: it takes central locks of its own.
		if c-1 < numClasses-1 {
			ci := &classInfos[c]
			if !blockStart(a, e, ci) {
				goto single
			}
			cen := &h.central[c]
			s := h.pages.span(uint32(e >> 32))
			if !cen.movable.Load() || !sparseSpan(spanLive(s), ci.blocks) {
				continue // as Relocate's dense check
			}
			if uint(cap(b)) > uint(ci.size) || c != 1 && *(*uint64)(ptr(a + 8)) == h.key {
				goto single
			}
			hold.acquire(cen)
			na, err := cen.relocate(h, s, a, cap(b))
			if err != nil {
				hold.release()
				panic(err.Error()) // the lock released, b as it was
			}
			if na != 0 {
				bs[i] = bytesAt(na, cap(b))[:len(b)]
				moved++
			}
			continue
		}
	single:
		hold.release()
		var ok bool
		if bs[i], ok = h.Relocate(b); ok {
			moved++
		}
	}
	return moved
}

// relocateHold is how many slices RelocateAll looks at under one hold of a
// class's central lock: enough that the lock's cost is spread thin, few
// enough that an Alloc of the class on another goroutine, refilling its
// magazine, waits a few microseconds at most.
const relocateHold = 64

// relocateHolder is the central lock RelocateAll holds, and for how many
// more slices it may keep it.
type relocateHolder struct {
	cen  *central
	left int
}

// spend counts one slice against the hold, and lets the lock go when the
// hold's slices are spent.
func (r *relocateHolder) spend() {
	if r.cen != nil {
		if r.left--; r.left <= 0 {
			r.release()
		}
	}
}

// acquire holds cen's lock, releasing another class's held before.
func (r *relocateHolder) acquire(cen *central) {
	if r.cen == cen {
		return
	}
	r.release()
	cen.mu.Lock()
	r.cen, r.left = cen, relocateHold
}

// release lets go of the lock held, if any.
func (r *relocateHolder) release() {
	if r.cen != nil {
		r.cen.mu.Unlock()
		r.cen = nil
	}
}

// relocate is Relocate of a block its dense check did not answer for: it
// moves it, or says why not.
func (h *Heap) relocate(b []byte) ([]byte, bool) {
	a := addrOf(b)
	if h.checked() {
		return h.relocateChecked(b)
	}
	// The pagemap, the span and the blocks are read between enter and exit:
	// Close unmaps them (closing.go).
	if !h.enter() {
		panic(closedError("Relocate"))
	}
	page, ok := h.pages.pageOf(a)
	if !ok {
		h.exit()
		panic(fmt.Sprintf("offheap: Relocate of %#x (%d bytes), which this heap did not allocate: %s", a, cap(b), appendMoved))
	}
	e := *h.pages.entry(page)
	c := uint8(e)
	if c-1 >= numClasses-1 {
		defer h.exit()
		h.relocateRun(a, e)
		return b, false
	}
	ci := &classInfos[c]
	if q, into := blockIn(a, e, ci); into != 0 || q >= uint64(ci.blocks) {
		h.exit()
		start := a - uintptr(into)
		if sharedBlock(start, a) {
			panic(fmt.Sprintf("offheap: Relocate of %#x, the bytes of a Shared: a Shared's block cannot move while it is retained", a))
		}
		panic(fmt.Sprintf("offheap: Relocate of %#x, which is not the start of a block: it is %d bytes into the %d-byte block at %#x",
			a, into, ci.size, start))
	}
	if uint(cap(b)) > uint(ci.size) {
		h.exit()
		panic(fmt.Sprintf("offheap: Relocate of %d bytes at %#x, past the end of its %d-byte block: Relocate moves a slice Alloc returned, or a prefix of one", cap(b), a, ci.size))
	}
	s := h.pages.span(uint32(e >> 32))
	defer h.exit()
	if c != 1 && *(*uint64)(ptr(a + 8)) == h.key {
		h.checkFree(a, c) // the key: free, or live data that holds it (doublefree.go)
	}
	cen := &h.central[c]
	cen.mu.Lock()
	na, err := cen.relocate(h, s, a, cap(b))
	cen.mu.Unlock()
	if err != nil {
		panic(err.Error()) // the lock released, b as it was
	}
	if na == 0 {
		return b, false
	}
	return bytesAt(na, cap(b))[:len(b)], true
}

// Relocate's summary of a class (central.nsparse, nheld, movable) answers
// for a whole class at once, with one load of a word no fast path writes,
// what the dense check would otherwise learn from the span of every block: that no
// block of the class can move. A move takes a block of a span s with a
// live block and at most half of them live (a sparse span: one such span
// counted in nsparse) to the target, a listed span other than s with more
// live blocks than s (one more counted in nheld); s is listed too, since a
// span has a block to give, and so is on the partial list, whenever it is
// not full. So when nsparse is 0 or nheld below 2, or the one sparse span
// is the target itself (publish), relocate would refuse every block of the
// class, and Relocate refuses it without reading its span. A pass that
// converged leaves each class so: no sparse span, or a single listed one
// with nothing fuller to move into. Empty spans count in
// neither (they hold no block to move, and relocate never fills one), so
// a class's kept empty span does not hold the summary up.
//
// The counts are exact: every change of a span's live count (take, put,
// abandon) or listing (push, unlink) under mu is bracketed by relocKind
// before and recount after (grow and freeSpan touch only empty spans).
// movable is read without mu, as spanLive is: a Relocate that reads it
// false while another goroutine makes a span sparse misses a move, as it
// would reading the span a moment earlier.

// spanKind is a span's part in its class's summary: sparse and held bits.
type spanKind uint8

const (
	kindSparse spanKind = 1 << iota // counted in nsparse
	kindHeld                        // counted in nheld
)

// relocKind is s's part in its class's summary. Called with mu held.
func (s *span) relocKind() spanKind {
	live := s.carved - s.nfree
	if live == 0 {
		return 0
	}
	var k spanKind
	if sparseSpan(live, classBlocks[s.class]) {
		k |= kindSparse
	}
	if s.listed {
		k |= kindHeld
	}
	return k
}

// recount moves s's part in the summary from was (its relocKind before the
// change) to what it is now, and publishes movable. Called with mu held.
func (c *central) recount(h *Heap, s *span, was spanKind) {
	now := s.relocKind()
	if now == was {
		return
	}
	c.nsparse += uint32(now&kindSparse) - uint32(was&kindSparse)
	c.nheld += uint32(now&kindHeld>>1) - uint32(was&kindHeld>>1)
	c.publish(h)
}

// publish stores movable: whether the counts leave a move possible. They
// do when a sparse span and another held one exist, unless the one sparse
// span is the target itself, which relocate keeps while it is listed
// (target) and never moves a block out of. Called with mu held, after the
// counts or the target change.
func (c *central) publish(h *Heap) {
	m := c.nsparse > 0 && c.nheld >= 2
	if m && c.nsparse == 1 && c.reloc != 0 {
		t := h.pages.span(c.reloc)
		m = !(t.listed && t.class == c.class && t.relocKind()&kindSparse != 0)
	}
	if m != c.movable.Load() {
		c.movable.Store(m)
	}
}

// sparseSpan reports whether a span of a class of blocks per span, live of
// them live, is sparse enough for Relocate to move its blocks out: at most
// half full. A fuller span is left as it is: emptying it would move more
// blocks than it frees, and the class average, the threshold jemalloc's
// defragmentation hint uses, would keep the spans just above it (half of
// them, right after an eviction at random) out of a single pass.
func sparseSpan(live, blocks uint32) bool { return live <= blocks/2 }

// spanLive is how many of s's blocks are live (handed out, or held by a
// magazine, a depot or a Cache), read without the central lock that guards
// s: a hint, which Relocate checks again under the lock. nfree is read
// first, so that the difference cannot wrap (carved only grows while a span
// lives, and nfree never passes it). The span array is metadata, mapped
// outside Go's memory in every build (region_race.go).
func spanLive(s *span) uint32 {
	free := atomic.LoadUint32(&s.nfree)
	return atomic.LoadUint32(&s.carved) - free
}

// relocate moves the n bytes of the live block at a, of span s, to a block
// of the span Relocate fills, and frees a to s; it returns the new block, or
// 0 when moving would not help (s is not sparse, or no fuller span has a
// free block) or the heap is closed. A corrupt free list in the target
// (freelist.go) is abandoned and returned as err, a not moved; the caller
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
	na, carved, ok := t.take(h)
	if !ok {
		return 0, c.abandon(h, t, na) // take changed nothing
	}
	c.spanFree--
	if t.exhausted() {
		c.unlink(h, t) // and no longer the target: the next move chooses another
	}
	c.recount(h, t, k)
	raceAcquire(ptr(na)) // race builds: take released it to its next owner, this goroutine
	if c.class != 1 {
		*(*uint64)(ptr(na + 8)) = 0 // the double-free key (doublefree.go), in case n leaves it
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

// target is the span Relocate fills for the class with a block of s, which
// holds live blocks: a listed span other than s holding more live blocks
// than s, or nil when there is none to be had. It is the span chosen last
// (reloc) while it qualifies, else the fullest of the candidates (cands):
// the spans with a live block that the last scan of the partial list found,
// in a heap by their live blocks. Spans other than the target only lose
// blocks to a pass, so a candidate found with fewer than its key is placed
// again by what it holds, and the first is then the fullest, as a scan
// would find it. A scan costs a load per partial span, and once per span
// filled, as it was, it made a pass's cost grow with the square of the
// heap (docs/DESIGN.md, "Relocate's target, from a heap"); now it costs
// that and the heap's ordering once per as many choices as it found spans:
// scanBudget, spent by each look at the candidates, has the list scanned
// again then (new spans join it so), and Trim empties it (central.trim).
// Called with mu held.
func (c *central) target(h *Heap, s *span, live uint32) *span {
	var cur *span
	if id := c.reloc; id != 0 {
		// An id of a span since freed may name a span of another class, or
		// none (freed spans are unlisted).
		if t := h.pages.span(id); t.listed && t.class == c.class {
			if n := t.carved - t.nfree; n > live && t != s {
				return t
			} else if n >= live {
				return nil // s is no emptier than the fullest, as of its choice
			}
			cur = t // it lost blocks since it was chosen: maybe no longer the fullest
		}
	}
	if c.scanBudget == 0 || len(c.cands) == 0 {
		c.scan(h)
	}
	c.scanBudget--
	for len(c.cands) > 0 {
		id, was := uint32(c.cands[0]), uint32(c.cands[0]>>32)
		t := h.pages.span(id)
		n := t.carved - t.nfree
		if !t.listed || t.class != c.class || n == 0 {
			c.cands.popFirst() // freed, full or emptied since the scan
			continue
		}
		if n < was {
			// A pass moved blocks out of it since the scan: placed again
			// by what it holds now, so that the first is the fullest.
			c.cands[0] = uint64(n)<<32 | uint64(id)
			heap.Fix(&c.cands, 0)
			continue
		}
		if cur != nil && n <= cur.carved-cur.nfree {
			return nil // no fuller than the target it would replace
		}
		// The target from now on, though it may be no fuller than s (no
		// move, then): so a class whose one sparse span it is reads as
		// having nothing to move (publish).
		c.cands.popFirst()
		c.reloc = id
		c.publish(h)
		if n <= live || t == s {
			return nil
		}
		return t
	}
	return nil
}

// scan fills cands from the partial list's spans with a live block, and
// sets scanBudget. Called with mu held.
func (c *central) scan(h *Heap) {
	c.cands = c.cands[:0]
	for id := c.partial; id != 0; {
		t := h.pages.span(id)
		if n := t.carved - t.nfree; n != 0 {
			c.cands = append(c.cands, uint64(n)<<32|uint64(id))
		}
		id = t.next
	}
	heap.Init(&c.cands)
	c.scanBudget = uint32(min(uint64(max(len(c.cands), 1)), math.MaxUint32))
}

// spanOrder is Relocate's candidate targets, a heap of the spans' live
// blocks << 32 | their ids, the fullest first (container/heap). A key is
// its span's live blocks at the scan. Spans other than the target only
// lose blocks to a pass, so once the first's key is brought down to what
// it holds, it is the fullest (target); a span that a refill took blocks
// from since is fuller than its key, and chosen later than a scan would.
type spanOrder []uint64

func (o spanOrder) Len() int           { return len(o) }
func (o spanOrder) Less(i, j int) bool { return o[i] > o[j] }
func (o spanOrder) Swap(i, j int)      { o[i], o[j] = o[j], o[i] }
func (o *spanOrder) Push(x any)        { *o = append(*o, x.(uint64)) }
func (o *spanOrder) Pop() any {
	old := *o
	x := old[len(old)-1]
	*o = old[:len(old)-1]
	return x
}

// popFirst drops the first, as heap.Pop would without boxing it.
func (o *spanOrder) popFirst() {
	n := len(*o) - 1
	(*o)[0] = (*o)[n]
	*o = (*o)[:n]
	if n > 0 {
		heap.Fix(o, 0)
	}
}

// relocateRun is Relocate of a page that no small class owns, at address a
// with pagemap word e: a sampled heap's guarded block, a large block or a
// profiled sample, none of which moves, or
// something Relocate refuses, with a panic as Free's. Called between enter
// and exit.
func (h *Heap) relocateRun(a uintptr, e uint64) {
	switch uint8(e) {
	case classGuarded: // a sampled heap's sample: the checker's (guard.go)
		if h.hasChecker() {
			h.checkRecordRef(a, 1, "Relocate") // panics unless a starts a live block
			return
		}
	case classArena:
		panic(fmt.Sprintf("offheap: Relocate of %#x, which belongs to an Arena: an arena's memory does not move, and is freed all at once by the arena's Reset or Release", a))
	case classLarge, classSampled:
		// The first page of a run holds its length; a later page has 1<<8.
		if uint32(e)>>8 == 0 && a&(pageSize-1) == 0 {
			return
		}
		panic(fmt.Sprintf("offheap: Relocate of %#x, which is not the start of a block", a))
	}
	panic(fmt.Sprintf("offheap: Relocate of %#x, which is not allocated (already freed, or never handed out)", a))
}

// relocateChecked is Relocate in checked mode: every small block moves,
// through the checker's Alloc and Free, so that a stale use of b is
// caught; Free refuses what it refuses, and the new block goes back.
func (h *Heap) relocateChecked(b []byte) ([]byte, bool) {
	n := cap(b)
	if n > maxSmall {
		return b, false
	}
	// The checker vouches for b before its bytes are read: a freed
	// block's may be inaccessible.
	func() {
		if !h.enter() {
			panic(closedError("Relocate"))
		}
		defer h.exit()
		h.checkRecordRef(addrOf(b), uint64(n), "Relocate")
	}()
	nb := h.AllocUnzeroed(n)
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
