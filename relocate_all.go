package offheap

// RelocateAll: Relocate over a batch, entering the heap once and holding a
// class's central lock across consecutive moves of the class.

import "sync/atomic"

// RelocateAll offers each slice of bs to Relocate and replaces it, in
// place, with the slice Relocate returns; it returns how many moved. A
// block moves or stays as Relocate would move or keep it, and each move is
// counted as Relocate counts it. A slice of capacity 0, such as nil, is
// skipped, so a pass can leave a hole for a value deleted since it was
// listed. To store Refs, take the Ref of every slice of bs afterwards.
//
// RelocateAll enters the heap once, looks each block up once, and makes
// consecutive moves of a class under one hold of the class's lock, let go
// at least every 64 slices. Hand it the values a pass visits under one hold
// of the program's own lock, a thousand or so (docs/storing-values.md).
//
// A slice that Relocate refuses makes RelocateAll panic as Relocate does,
// with no lock held, the slices before it replaced and the rest as they
// were; on a closed heap it panics with an error wrapping ErrClosed.
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
