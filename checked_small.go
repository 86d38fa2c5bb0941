package offheap

// Checked small blocks: the path every checked Alloc and Free of a block up to
// maxSmall-canaryLen bytes takes, the common case, kept free of locks, Go maps
// and shared cache lines. An Alloc takes its underlying block from the P's
// magazine and fills its record pinned; a Free checks and poisons the block
// and puts it in the P's quarantine ring within one pin, and the block that
// leaves the ring goes into the P's magazine in the same pin.
// BenchmarkCheckedPair64's floor arm does only what checked mode must (two
// stacks, the record, the canary, the compare-and-swap, the poison written and
// checked through a quarantine of 1024) with none of the heap around it: the
// distance from it to the checked arm is what the heap adds.

import (
	"fmt"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pin"
)

// minCheckedClass is the smallest class a checked small block takes, so
// that blocks start at least recGranule bytes apart.
var minCheckedClass = sizeClass(recGranule)

// checkedClass is the class of a checked small block of n bytes: room for
// the canary, and at least minCheckedClass.
func checkedClass(n int) uint8 {
	return max(sizeClass(n+canaryLen), minCheckedClass)
}

// allocSmall allocates a checked small block of n bytes for a caller at st:
// an underlying block of n+canaryLen bytes from this P's magazine (or a
// refill), its record filled in place. It touches the block and its record
// pinned, with the magazine in service or the heap seen open.
func (c *checker) allocSmall(n int, zero bool, st stackID) ([]byte, error) {
	cl := checkedClass(n)
	h := c.h
	var a uintptr
	if m := h.mag(pin.Pin()); m != nil {
		a = m.take(cl)
	}
	if a == 0 {
		pin.Unpin()
		var err error
		if a, err = h.smallBlock(cl); err != nil {
			panicCorrupt(err)
			return nil, err
		}
		pin.Pin()
		if h.closed.Load() {
			pin.Unpin()
			return nil, ErrClosed
		}
	}
	c.fillSmall(a, n, cl, st, zero)
	pin.Unpin()
	return bytesAt(a, n), nil
}

// fillSmall makes the underlying block a of class cl, which the caller
// alone holds, a live checked block of n bytes allocated at st: its record,
// its canary, its zeroing. Called pinned (see allocSmall).
func (c *checker) fillSmall(a uintptr, n int, cl uint8, st stackID, zero bool) {
	c.fill(a, uint64(n), st)
	raceAcquire(ptr(a)) // race builds: after the block left the quarantine
	canary(c.canaryKey(a), a+uintptr(n), a+uintptr(classSize[cl]), true)
	if zero {
		clear(bytesAt(a, n))
	}
}

// freeSmall frees a, which must be the start of a live small block, for a
// caller at st, and reports true; false if a is not in a small block's span
// (the caller then tries the runs). It panics with a *MemoryError. It reads
// and writes the block and its record pinned, with the heap seen open, and
// reports a bad Free between enter and exit.
func (c *checker) freeSmall(a uintptr, st stackID) bool {
	pid := pin.Pin()
	if c.h.closed.Load() {
		pin.Unpin()
		panic(fmt.Errorf("%w: Free of %#x", ErrClosed, a))
	}
	r, start, cl := c.smallRecord(a)
	if r == nil {
		pin.Unpin()
		return false
	}
	if !start || !atomic.CompareAndSwapUint32(&r.state, stateLive, stateFreeing) {
		pin.Unpin()
		c.panicFree(a, start, r, st)
	}
	// From here the record is ours: a racing Free of the same block fails
	// the compare-and-swap above.
	size := r.size
	if r.sum != c.seal(a, size) {
		r.state = stateLive // leave the block as it is
		pin.Unpin()
		c.raise(corrupted(a))
	}
	usable := classSize[cl]
	intact := canary(c.canaryKey(a), a+uintptr(size), a+uintptr(usable), false)
	alloc := r.alloc
	r.free = st
	r.state = stateFreed
	poisonWords(a, usable)
	raceRelease(ptr(a)) // race builds: to whoever takes it out of the quarantine
	var out ringSlot
	if p := c.q.rings.get(pid); p != nil { // into the ring within the same pin
		out = c.ringPush(pid, p, a, cl)
		pin.Unpin()
	} else {
		pin.Unpin()
		out = c.quarantineSmall(a, cl)
	}
	var corrupt *MemoryError
	if !intact {
		corrupt = overrun(a, size, alloc)
	}
	if out != 0 {
		c.releaseOut(out, corrupt)
	}
	if corrupt != nil {
		c.raise(corrupt)
	}
	return true
}

// panicFree panics with what is wrong with the Free of a by a caller at st:
// not a block start (start false), or a block whose record r is not live.
// It reads the records between enter and exit.
func (c *checker) panicFree(a uintptr, start bool, r *record, st stackID) {
	if !c.h.enter() {
		panic(fmt.Errorf("%w: Free of %#x", ErrClosed, a))
	}
	defer c.h.exit()
	if !start {
		c.raise(c.unknownFree(a))
	}
	c.raise(c.notLive(a, r, st))
}

// ringPush puts the freed small block a of class cl in P pid's ring p, for
// a caller pinned to that P. The block that leaves in exchange (the ring
// was full) goes into the P's magazine when its poison is intact and the
// magazine has room, the common case; otherwise it is returned for
// releaseOut. 0: nothing left to do.
func (c *checker) ringPush(pid int, p *ring, a uintptr, cl uint8) ringSlot {
	if !c.q.pushSmall(p, a, cl) {
		return 0
	}
	out := c.q.popSmall(p)
	oa, ocl := out.addr(), out.class()
	raceAcquire(ptr(oa)) // race builds: after its Free's poison; put releases it
	if m := c.h.mag(pid); m != nil && poisonedWords(oa, classSize[ocl]) && m.put(ocl, oa) {
		c.rec(oa).state = stateNone
		return 0
	}
	return out
}

// quarantineSmall puts the freed small block a of class cl in this P's
// ring, for a caller whose P had none, and returns the block that leaves in
// exchange, as ringPush does.
func (c *checker) quarantineSmall(a uintptr, cl uint8) ringSlot {
	for {
		pid := pin.Pin()
		p := c.q.rings.get(pid)
		if p == nil {
			pin.Unpin()
			if c.ringless(a, cl, pid) {
				return 0
			}
			continue
		}
		out := c.ringPush(pid, p, a, cl)
		pin.Unpin()
		return out
	}
}

// ringless takes the freed small block a of class cl on P pid, which has no
// ring, between enter and exit, and reports whether it is done
// with it: through the runs' ring for a P beyond maxProcs; else it gives the
// P a ring (false: try again), or gives the block back at once if none can
// be had. On a closing heap the block goes with the heap.
func (c *checker) ringless(a uintptr, cl uint8, pid int) bool {
	h := c.h
	if !h.enter() {
		return true
	}
	defer h.exit()
	if pid >= maxProcs {
		if err := c.quarantineRun(a, cl); err != nil {
			c.raise(err)
		}
		return true
	}
	if err := c.q.rings.install(pid, &h.closed, c.q.newRing); err != nil {
		// No memory for a ring, or a closing heap: give the block back at
		// once (its poison is checked as it leaves).
		if err := c.release(a, cl, true); err != nil {
			c.raise(err)
		}
		return true
	}
	return false
}

// releaseOut gives back the block out that left a ring (release), between
// enter and exit, and panics with the write after free it found, joined
// with corrupt. On a closing heap the block goes with the heap.
func (c *checker) releaseOut(out ringSlot, corrupt *MemoryError) {
	if !c.h.enter() {
		return
	}
	defer c.h.exit()
	if err := c.release(out.addr(), out.class(), true); err != nil {
		if corrupt != nil {
			err = joinErrors([]error{corrupt, err})
		}
		c.raise(err)
	}
}
