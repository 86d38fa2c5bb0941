package offheap

// The OnLastRelease callbacks of Shared: run outside every lock, without
// recursion.
//
// The last Release frees with h.Free and, before that, runs the OnLastRelease
// callback; no lock of this package is held at either point (the registry
// entry is removed first). A callback may release other handles whose
// callbacks release more: a tree. To run a tree of any depth without
// recursion, each goroutine that runs a callback registers itself as a
// drainer (sharedDrainers); a final release whose goroutine is already
// draining (the release is inside a callback further up its own stack) pushes
// the work on that drainer's pending list and returns, and the drainer runs
// the list in a loop. So the stack holds at most one callback at a time,
// whatever the depth of the tree. Work is never handed to another goroutine:
// a callback runs on the goroutine of the Release that took the count to 0,
// after that Release's own callback chain. Go has no goroutine-local storage,
// so a drainer locks its goroutine to its OS thread while it drains and is
// keyed by the thread id (gettid, a fast system call): a release on that
// thread can only come from that goroutine. The lookup is made only by final
// releases of handles with a callback, and only while some goroutine drains.

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A sharedPending is a final release whose callback has yet to run.
type sharedPending struct {
	s Shared
	f func([]byte)
}

// A sharedDrainer is a goroutine that is running callbacks, and the final
// releases its callbacks made, to run after them. Only its goroutine touches
// it.
type sharedDrainer struct {
	pending []sharedPending
}

var (
	sharedDrainers sync.Map     // drainer's thread id (uint64) -> *sharedDrainer
	sharedDraining atomic.Int64 // goroutines draining now: 0 spares the lookup
)

// runOnRelease runs p's callback and frees its block, and does the same for
// every final release the callbacks make, in a loop. If this goroutine is
// already draining (p comes from a callback further up its stack), it queues
// p for that loop instead: the stack never holds two callbacks.
//
// A drainer is found by the id of its OS thread (sharedSelf): it locks its
// goroutine to the thread while it drains, so no other goroutine runs there,
// and a release on that thread is a release from inside one of its
// callbacks. It registers after locking and unregisters before unlocking.
func runOnRelease(p sharedPending) {
	if sharedDraining.Load() != 0 {
		if d, ok := sharedDrainers.Load(sharedSelf()); ok {
			d := d.(*sharedDrainer)
			d.pending = append(d.pending, p)
			return
		}
	}
	runtime.LockOSThread()
	id := sharedSelf()
	if id == 0 { // cannot tell threads apart: run it here, nested
		runtime.UnlockOSThread()
		if r := p.run(); r != nil {
			panic(r)
		}
		return
	}
	d := &sharedDrainer{pending: []sharedPending{p}}
	sharedDrainers.Store(id, d)
	sharedDraining.Add(1)
	defer func() {
		sharedDrainers.Delete(id)
		sharedDraining.Add(-1)
		runtime.UnlockOSThread()
	}()
	if first := d.drain(); first != nil {
		panic(first) // every pending callback has run: now the first panic continues
	}
}

// drain runs the pending callbacks, last queued first, until none is left,
// and returns what the first of them to panic panicked with (nil if none
// did). A panic stops only its own callback: the others all run.
func (d *sharedDrainer) drain() (first any) {
	for len(d.pending) > 0 {
		p := d.pending[len(d.pending)-1]
		d.pending[len(d.pending)-1] = sharedPending{}
		d.pending = d.pending[:len(d.pending)-1]
		if r := p.run(); first == nil {
			first = r
		}
	}
	return first
}

// run calls the callback and frees the block, even if the callback panics,
// and returns what the callback (or else the Free) panicked with, or nil.
func (p sharedPending) run() any {
	r := recovered(func() { p.f(p.s.Bytes()) })
	if err := recovered(p.s.free); r == nil {
		r = err
	}
	return r
}

// recovered calls f and returns what it panicked with, or nil.
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}
