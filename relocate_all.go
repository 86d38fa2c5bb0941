package offheap

// RelocateAll: Relocate over a batch, entering the heap once and holding a
// class's central lock across consecutive moves of the class.

import (
	"sync/atomic"

	"github.com/offheap/offheap/internal/pageheap"
)

// RelocateAll offers each slice of bs to Relocate and replaces it, in place,
// with the slice Relocate returns; it returns how many moved. Slices of
// capacity 0 are skipped. It is the faster way to run a pass: it enters the
// heap and takes a class's lock once for many moves
// (docs/storing-values.md). A slice Relocate refuses panics as there: the
// slices before it hold what Relocate returned, and the rest are as they
// were. bs must not be used concurrently.
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
			e = *h.pages.Entry(uint32(off >> pageShift))
			c = pageheap.WordClass(e)
		}
		// Only a block of a small class in the first region is moved here;
		// everything else, and whatever Relocate would refuse or look at
		// more closely (a block that holds the free key), goes to Relocate
		// itself, with no lock held: it takes central locks of its own.
		if isSmall(c) {
			ci := &classInfos[c]
			if !blockStart(a, e, ci) {
				goto single
			}
			cen := &h.central[c]
			s := spanAt(&h.pages, pageheap.WordSpan(e))
			if !cen.movable.Load() || !sparseSpan(spanLive(s), ci.blocks) {
				continue // as Relocate's dense check
			}
			if uint(cap(b)) > uint(ci.size) || h.keyed(a, c) {
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
