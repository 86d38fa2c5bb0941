package offheap

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pin"
)

// The operations in progress between enter and exit, counted per P, which
// Close waits out before it unmaps (the protocol is closing.go's).

// busyStride keeps each P's count of operations in progress on a cache line
// of its own: the counts are written on every slow path (and every checked
// Alloc and Free), by the P's own goroutine.
const busyStride = 64

// mapBusy maps the per-P counts. They are off-heap, written with plain
// stores while pinned (only pinning guards them, as for magazines) and read
// by Close with atomic loads; the race detector, which would see the plain
// stores as races, does not see them.
func (h *Heap) mapBusy() error {
	p, err := osmem.Map(maxProcs * busyStride)
	if err != nil {
		return err
	}
	h.busy = p
	return nil
}

// busyAt is P pid's count; pid < maxProcs.
func (h *Heap) busyAt(pid int) *int64 {
	return (*int64)(unsafe.Add(h.busy, uintptr(pid)*busyStride))
}

// enter begins an operation that may touch the heap's memory outside one
// pinned section, or reports false if the heap is closed (or closing): the
// caller then fails with ErrClosed and touches nothing. Every true must be
// matched by one exit.
func (h *Heap) enter() bool {
	if !h.made() {
		// Before the pin: a fault while pinned kills the process, where
		// this panic is the caller's to recover.
		panic(errUnmade)
	}
	pid := pin.Pin()
	if h.closed.Load() {
		pin.Unpin()
		return false
	}
	if uint(pid) < maxProcs {
		*h.busyAt(pid)++
	} else {
		h.busyFar.Add(1) // a P without a slot (GOMAXPROCS above maxProcs)
	}
	pin.Unpin()
	return true
}

// exit ends an operation that enter began.
func (h *Heap) exit() {
	raceRelease(unsafe.Pointer(h)) // for the race detector: see waitIdle
	pid := pin.Pin()
	if uint(pid) < maxProcs {
		*h.busyAt(pid)--
	} else {
		h.busyFar.Add(-1)
	}
	pin.Unpin()
}

// waitIdle returns once no operation that enter began is in progress. Close
// calls it after marking the heap closed and quiescing.
func (h *Heap) waitIdle() {
	for d := time.Microsecond; ; d = min(2*d, time.Millisecond) {
		n := h.busyFar.Load()
		for pid := range maxProcs {
			n += atomic.LoadInt64(h.busyAt(pid))
		}
		if n == 0 {
			break
		}
		time.Sleep(d)
	}
	// The counts are invisible to the race detector; this gives it the
	// edge from every exit to what Close does next.
	raceAcquire(unsafe.Pointer(h))
}

// closedError is the error of a call on a closed heap: it wraps ErrClosed
// and names the call.
// errUnmade is the error of a call on a nil *Heap or a zero Heap: one that
// NewHeap did not make.
var errUnmade = errors.New("offheap: a Heap not made by NewHeap (a nil *Heap, or a zero Heap): make one with NewHeap, or use Default()")

// made reports whether NewHeap made h: a heap's busy counts are mapped
// before NewHeap returns it, and stay mapped (if unmapped) after Close.
func (h *Heap) made() bool { return h != nil && h.busy != nil }

func closedError(call string) error {
	return fmt.Errorf("%w: %s after the heap's Close (or during it: Close must not run concurrently with other calls)", ErrClosed, call)
}
