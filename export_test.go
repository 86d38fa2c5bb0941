package offheap

import "testing"

// Test hooks: what tests reach inside the heap, kept out of the production
// paths.

// newTestHeapFirstRegion is newTestHeap with a first region of size bytes,
// so that a test reaches the later regions (region.go) without filling 64
// GiB first.
func newTestHeapFirstRegion(t testing.TB, opts Options, size uintptr) *Heap {
	t.Helper()
	h, err := newHeap(opts, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// setClock makes now the page heap's clock (nanoseconds since the heap was
// made), for tests of the release timing that must not depend on the
// scheduler.
func (h *Heap) setClock(now func() int64) {
	h.pages.mu.Lock()
	h.pages.clock = now
	h.pages.mu.Unlock()
}

// fireReleaseTimer does what the release timer does when it fires, now,
// and returns when the timer is armed to fire next, by the clock (0: not
// armed).
func (h *Heap) fireReleaseTimer() int64 {
	ph := &h.pages
	ph.mu.Lock()
	if ph.timer != nil {
		ph.timer.Stop()
		ph.timer = nil
	}
	ph.mu.Unlock()
	ph.onTimer()
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.timerAt
}

// regionCount is how many regions the heap has.
func (h *Heap) regionCount() int { return len(h.pages.regions.Load().byPage) }

// resetDefault closes the default heap, if Default made one, and forgets it
// and the options SetDefaultOptions set: the next Default starts afresh.
func resetDefault() {
	defaultHeap.mu.Lock()
	defer defaultHeap.mu.Unlock()
	if h := defaultHeap.h.Swap(nil); h != nil {
		h.Close()
	}
	defaultHeap.opts = Options{}
}

// setQuarantine bounds each of the checker's quarantine rings to blocks
// blocks and bytes bytes, for tests that push a block out with a few Frees.
// Call it on a new checked heap, before its first Free: a ring's slots are
// sized when it is made.
func (h *Heap) setQuarantine(blocks, bytes int) { h.chk.q.init(blocks, bytes) }

// callersStack is callStack through runtime.Callers, as on systems where
// frame pointers are not walked: TestCheckedStackUnwinder compares the two.
//
//go:noinline
func callersStack() stackID {
	var s stack
	return intern(&s, s.callers(3)) // Callers, callers, callersStack
}
