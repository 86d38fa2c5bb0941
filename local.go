package offheap

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"weak"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/pageheap"
)

// NewLocal returns a Local of h for one goroutine at a time (see Local).
// It panics with TryNewLocal's error when the Local cannot be made. Close it
// when done.
func (h *Heap) NewLocal() *Local {
	c, err := h.newLocal("NewLocal")
	if err != nil {
		panic(err)
	}
	return c
}

// TryNewLocal is NewLocal returning the error instead of panicking:
// errors.Is(err, ErrClosed) after the heap's Close, or ErrAddressSpace when
// the system refuses to map the Local's stacks.
func (h *Heap) TryNewLocal() (*Local, error) {
	return h.newLocal("TryNewLocal")
}

// newLocal is NewLocal (call names the method, for the error).
func (h *Heap) newLocal(call string) (*Local, error) {
	if !h.made() {
		return nil, errUnmade
	}
	c := &Local{h: h, st: &noCache, fwd: h.checked()}
	if c.fwd {
		if h.closed.Load() {
			return nil, closedError(call)
		}
		return c, nil
	}
	w := weak.Make(c)
	st, err := h.getCache(w, call, h.startCacheSampling) // its samples drawn under the registry's lock
	if err != nil {
		return nil, err
	}
	c.st = st
	c.cleanup = runtime.AddCleanup(c, func(o cacheOwner) { _ = h.dropCache(o.st, o.w) }, cacheOwner{st, w})
	return c, nil
}

// Alloc is Heap.Alloc through the Local: n zeroed bytes with len and cap n,
// which any Free of the heap takes.
//
//go:nosplit
//go:noinline
func (c *Local) Alloc(n int) []byte {
	// Nosplit and never inlined, as Heap.Free: from the load of fastSize
	// to the last touch of the block there is no safe point, so a Close
	// that zeroed fastSize and quiesces waits the block's zeroing out.
	// fastSize is 0 in a checked heap too, whose
	// Locals go to the slow path. pop and clearBlock are popZeroed's two
	// halves, called here so that the one test of pop's result is this
	// branch: popZeroed's own test merges into a second one.
	h := c.h
	if uint(n)-1 < cacheMax && atomic.LoadUintptr(&h.fastSize) != 0 {
		if a := c.st.pop(sizeClass(n)); a != 0 {
			clearBlock(a, n, true)
			return bytesAt(a, n)
		}
	}
	return c.allocSlow(n, true)
}

// AllocUnzeroed is Heap.AllocUnzeroed through the Local: Alloc without the
// zeroing.
//
//go:nosplit
//go:noinline
func (c *Local) AllocUnzeroed(n int) []byte {
	h := c.h
	if uint(n)-1 < cacheMax && atomic.LoadUintptr(&h.fastSize) != 0 {
		if a := c.st.pop(sizeClass(n)); a != 0 {
			clearBlock(a, n, false)
			return bytesAt(a, n)
		}
	}
	return c.allocSlow(n, false)
}

// TryAlloc is Alloc returning the error instead of panicking: errors.Is(err,
// ErrLimit) past Options.Limit, ErrAddressSpace when the heap's address
// space cannot grow, ErrClosed after the heap's Close, ErrSize for a
// negative n or one no heap can hold, or a wrapped syscall.Errno when the
// system refuses memory. It panics after the Local's Close.
//
//go:nosplit
//go:noinline
func (c *Local) TryAlloc(n int) ([]byte, error) {
	h := c.h // Alloc's fast path, for the reasons given there
	if uint(n)-1 < cacheMax && atomic.LoadUintptr(&h.fastSize) != 0 {
		if a := c.st.pop(sizeClass(n)); a != 0 {
			clearBlock(a, n, true)
			return bytesAt(a, n), nil
		}
	}
	return c.slow(n, true, "TryAlloc")
}

// Free is Heap.Free through the Local: b may be any block of the heap,
// whoever allocated it, and Free panics, leaving the heap intact, where
// Heap.Free does.
//
//go:nosplit
//go:noinline
func (c *Local) Free(b []byte) {
	// The class is the one cap(b) names, as it is for every slice Alloc
	// returned, confirmed by the pagemap: the push depends on cap(b), not on
	// the pagemap's word, which only a branch reads, so the chain of dependent
	// loads from one pair to the next is shorter (BenchmarkPair64's
	// offheap-cache arm; docs/benchmarks.md, The Local pair). The checks are
	// Heap.Free's, in a nosplit section as there and in Alloc; freeAny makes
	// them for every other slice. The class has a key (cap(b) > 8), so the
	// claim is claimKey's, without claim's test of class 1. The tests are
	// nested ifs, not one &&: an && over an inlined helper's result sets a
	// register that the branch tests again.
	h := c.h
	a := addrOf(b)
	if n := cap(b); uint(n)-9 < cacheMax-8 { // the classes with a key
		cl := sizeClass(n)
		if off := a - h.base; off < atomic.LoadUintptr(&h.fastSize) {
			e := pageheap.PageWordAt(h.pmap, off>>pageShift)
			if st := c.st; pageheap.WordClass(e) == cl && blockStart(a, e, &classInfos[cl]) {
				if k, ok := st.slot(cl); ok {
					if h.claimKey(a) {
						raceRelease(ptr(a)) // race builds: to the block's next Alloc
						st.addAt(cl, k, a)
						return
					}
				}
			}
		}
	}
	c.freeAny(b)
}

// freeAny is Free for a slice whose capacity does not name its block's
// class (b[:k:k], or not a block), a block of 8 bytes or above cacheMax,
// a full stack and the key found: Heap.Free's fast path with the Local's
// stack for the magazine, its check and push the same inlined helpers
// (smallStart, claim, room, add: fastpath.go), in the same nosplit
// section.
//
//go:nosplit
func (c *Local) freeAny(b []byte) {
	if cap(b) == 0 {
		return
	}
	h := c.h
	a := addrOf(b)
	if off := a - h.base; off < atomic.LoadUintptr(&h.fastSize) {
		e := pageheap.PageWordAt(h.pmap, off>>pageShift)
		if cl, ok := smallStart(a, e); ok {
			st := c.st
			if st.room(cl) {
				if h.claim(a, cl) {
					raceRelease(ptr(a)) // as in Free
					st.add(cl, a)
					return
				}
			} else if st.cls[cl].cap != 0 { // full
				c.freeFull(b, cl)
				return
			}
		}
	}
	c.freeSlow(b)
}

// freeSlow serves the Frees the Local's stacks do not take: of a class the
// Local does not hold, through a forwarding or closed Local (whose stacks
// hold nothing), and everything Heap.Free's slow path serves.
func (c *Local) freeSlow(b []byte) {
	c.use("Free")
	defer c.done()
	c.h.Free(b)
}

// freeFull serves a Free of block b of class cl, whose stack is full: it
// spills the stack's oldest batch and frees b again, with room.
func (c *Local) freeFull(b []byte, cl uint8) {
	if c.spill(cl) {
		c.Free(b)
		return
	}
	c.freeSlow(b)
}

// Flush hands every block the Local holds back to the heap, where other
// goroutines' Allocs find them.
func (c *Local) Flush() {
	c.use("Flush")
	defer c.done()
	h := c.h
	if c.fwd {
		if h.closed.Load() {
			panic(closedError("Local.Flush"))
		}
		return
	}
	if !h.enter() {
		panic(closedError("Local.Flush")) // Close took the blocks with the rest of the heap
	}
	defer h.exit()
	h.emptyCache(c.st)
}

// Close flushes the Local and releases it; later calls on it panic. Close
// of a closed Local does nothing. After the heap's Close it releases the
// Local and panics with an error wrapping ErrClosed, as an Arena's Release
// does.
func (c *Local) Close() {
	c.use("Close")
	defer c.done()
	if c.closed {
		return
	}
	c.closed = true
	st := c.st
	c.st = &noCache
	open := !c.h.closed.Load()
	if !c.fwd {
		c.cleanup.Stop()
		open = c.h.dropCache(st, weak.Make(c))
	}
	if !open {
		panic(closedError("Local.Close"))
	}
}

// allocSlow is slow for Alloc and AllocUnzeroed, which panic with its
// error.
func (c *Local) allocSlow(n int, zero bool) []byte {
	call := "Alloc"
	if !zero {
		call = "AllocUnzeroed"
	}
	b, err := c.slow(n, zero, call)
	if err != nil {
		panic(err)
	}
	return b
}

// slow serves every allocation the Local's stacks did not: an empty stack
// (a refill), a sample, a size the Local does not hold, a checked heap, a
// closed Local or heap. call names the method, for a closed Local's panic
// and a closed heap's error.
func (c *Local) slow(n int, zero bool, call string) ([]byte, error) {
	c.use(call)
	defer c.done()
	h := c.h
	if c.fwd || uint(n)-1 >= cacheMax {
		return h.allocVia(n, zero)
	}
	if !h.enter() {
		return nil, closedError("Local." + call)
	}
	cl := sizeClass(n)
	if guard, prof := c.sampleDue(cl); guard || prof {
		h.exit()
		var b []byte
		var err error
		if guard {
			// Walked from this frame: it starts at the caller of Alloc, as
			// the heap's.
			var s stack
			b, err = h.checkAlloc(n, zero, callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs))))
		} else {
			b, err = h.allocProfiled(n, zero, kindHeap)
		}
		if err == nil {
			return b, nil
		}
		if !h.enter() {
			return nil, closedError("Local." + call)
		}
	} else if a, err := c.refill(cl); err == nil {
		raceAcquire(ptr(a)) // as in pop
		clearBlock(a, n, zero)
		h.exit()
		return bytesAt(a, n), nil
	} else if _, ok := err.(*corruptError); ok {
		h.exit()
		panicCorrupt(err)
	}
	// At the limit, or closing: the Local's own blocks go back first,
	// where the heap's reclaim finds them, and the heap's
	// slow path tries again, or returns its error.
	h.emptyCache(c.st)
	h.exit()
	return h.allocVia(n, zero)
}

// allocVia is an allocation a Local passes to the heap, with the heap's
// error: TryAlloc's, or, unzeroed, the panic of AllocUnzeroed (which no
// TryAlloc reaches).
func (h *Heap) allocVia(n int, zero bool) ([]byte, error) {
	if zero {
		return h.TryAlloc(n)
	}
	return h.AllocUnzeroed(n), nil
}

// refill takes a batch of class cl from the central list, returns its first
// block and stacks the rest. Called between enter and exit, by the owner,
// with cl's stack empty.
func (c *Local) refill(cl uint8) (uintptr, error) {
	st := c.st
	mc := &st.cls[cl]
	var buf [maxDepth/2 + 1]uintptr
	n, _, err := c.h.central[cl].get(c.h, buf[:batchOf(mc.cap)])
	if err != nil {
		return 0, err
	}
	mc.n = uint32(copy(st.slots[cl][:], buf[1:n]))
	return buf[0], nil
}

// spill makes room in the full stack of class cl, for Free to try again,
// by moving the stack's oldest batch to the central list; it reports false
// on a closed heap, whose Free then panics.
func (c *Local) spill(cl uint8) bool {
	h := c.h
	if !h.enter() {
		return false
	}
	defer h.exit()
	st := c.st
	mc := &st.cls[cl]
	s := &st.slots[cl]
	k := batchOf(mc.cap)
	h.central[cl].putBatch(h, s[:k])
	copy(s[:], s[k:mc.n])
	mc.n -= k
	return true
}

// use begins a call on c off its fast paths: it panics if c is closed and,
// in checked mode, if another goroutine is inside a call on c. done ends
// it.
func (c *Local) use(call string) {
	if c.fwd && !c.busy.CompareAndSwap(false, true) {
		panic(fmt.Sprintf("offheap: Local.%s while another goroutine is using the Local: a Local is for one goroutine at a time; give each goroutine its own Local (Heap.NewLocal), or use the Heap", call))
	}
	if c.closed && call != "Close" {
		c.done()
		panic(fmt.Sprintf("offheap: Local.%s after the Local's Close", call))
	}
}

// done ends what use began.
func (c *Local) done() {
	if c.fwd {
		c.busy.Store(false)
	}
}
