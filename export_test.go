package offheap

import (
	"sync/atomic"
	"testing"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/pageheap"
)

// Test hooks: what tests reach inside the heap, kept out of the production
// paths.

// newTestHeapFirstRegion is newTestHeap with a first region of size bytes,
// so that a test reaches the later regions (internal/pageheap/region.go) without filling 64
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
	h.pages.Mu.Lock()
	h.pages.Clock = now
	h.pages.Mu.Unlock()
}

// fireReleaseTimer does what the release timer does when it fires, now,
// and returns when the timer is armed to fire next, by the clock (0: not
// armed).
func (h *Heap) fireReleaseTimer() int64 {
	ph := &h.pages
	ph.Mu.Lock()
	if ph.Timer != nil {
		ph.Timer.Stop()
		ph.Timer = nil
	}
	ph.Mu.Unlock()
	ph.OnTimer()
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	return ph.TimerAt
}

// releaseTimerAt is when the release timer is armed to fire, by the clock
// (0: not armed).
func (h *Heap) releaseTimerAt() int64 {
	h.pages.Mu.Lock()
	defer h.pages.Mu.Unlock()
	return h.pages.TimerAt
}

// regionCount is how many regions the heap has.
func (h *Heap) regionCount() int { return len(h.pages.Regions.Load().ByPage) }

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

// callStack returns the depot's name for the calling goroutine's stack, from
// callStack's caller out, captured as allocSlow and freeSlow capture theirs.
//
//go:noinline
func callStack() stackID {
	var s stack
	return callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs)))
}

// callersStack is callStack through runtime.Callers, as on systems where
// frame pointers are not walked: TestCheckedStackUnwinder compares the two.
//
//go:noinline
func callersStack() stackID {
	var s stack
	return callstack.Intern(&s, s.Callers(3)) // Callers, callers, callersStack
}

// failRuns makes every allocation of a run of pages of h (an arena's chunks,
// a large block, a new span) fail with ErrLimit from now until
// failRuns(false), as a heap at its Limit does: it sets the page heap's
// limit below what the heap maps. Blocks already in the heap's magazines,
// depots and spans are still handed out.
func (h *Heap) failRuns(fail bool) {
	ph := &h.pages
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	ph.Limit = 0
	if h.opts.Limit > 0 {
		ph.Limit = max(uint64(h.opts.Limit)>>pageShift, 1)
	}
	if fail {
		ph.Limit = 1
	}
}

// releaseLosingSlot is the creator's Release of a Hot handle whose fold
// forgets the first slot that holds a nonzero count: the bug
// TestSharedHotStressCatchesBrokenFold plants, made of seal's own steps but
// for the lost slot. The handle's heap must be open.
func (s Shared) releaseLosingSlot() {
	if raceOn {
		raceRelease(s.data) // as drop does before it seals
	}
	a := s.hotArea()
	if !atomic.CompareAndSwapUint32(modeAt(a), hotPerP, hotSealed) {
		panic("test: the handle was sealed already")
	}
	var sum int64
	lost := false
	for i := range s.nslots(a) {
		v := atomic.SwapInt64(slotAt(a, i), slotSealed)
		if !lost && v != 0 {
			lost = true // the deliberate bug: this slot's count is lost
			continue
		}
		sum += v
	}
	s.finish(s.sealed(sum))
}

// cacheHeld is the bytes of free blocks c's stacks hold.
func cacheHeld(c *Local) int {
	n := 0
	for cl := 1; cl < numClasses; cl++ {
		n += int(c.st.cls[cl].n) * int(classSize[cl])
	}
	return n
}

// cacheStates is how many Local states h has mapped.
func cacheStates(h *Heap) int {
	h.caches.mu.Lock()
	defer h.caches.mu.Unlock()
	return len(h.caches.all)
}

// spareCaches returns how many emptied states wait for the next NewLocal.
func spareCaches(h *Heap) int {
	h.caches.mu.Lock()
	defer h.caches.mu.Unlock()
	return len(h.caches.spare)
}

// holdCache begins a call on c, as a goroutine inside one would, and
// returns the function that ends it: for the test of checked mode's
// detection of two goroutines on one Local.
func holdCache(c *Local) (release func()) {
	c.use("Alloc")
	return c.done
}

// collapseNow runs the collapse pass of a heap with huge pages now, as its
// timer would once allocations pause, and reports whether huge pages are
// on.
func (h *Heap) collapseNow() bool {
	ph := &h.pages
	ph.Mu.Lock()
	on := ph.Huge.On
	ph.Huge.First = -1 // no waiting for a lull
	if ph.Huge.Timer != nil {
		ph.Huge.Timer.Stop()
		ph.Huge.Timer = nil
	}
	ph.Mu.Unlock()
	if on {
		ph.CollapsePass()
	}
	return on
}

// corruptBytes is Stats().CorruptBytes (freelist_test.go).
func corruptBytes(h *Heap) uint64 { return h.Stats().CorruptBytes }

// movedRanges is how many ranges the heap keeps moved pages in (internal/pageheap/mappings.go).
func (h *Heap) movedRanges() int {
	h.pages.Mu.Lock()
	defer h.pages.Mu.Unlock()
	return len(h.pages.Moved)
}

// setGuardMappingsMost makes the most mappings guard pages may hold, for
// all heaps, held now plus n, until the test ends (internal/pageheap/guard_maps.go).
func setGuardMappingsMost(t testing.TB, n int64) {
	l := &pageheap.GuardLedger
	l.Mu.Lock()
	was := l.Most
	l.Most = l.Held + n
	l.Mu.Unlock()
	t.Cleanup(func() {
		l.Mu.Lock()
		l.Most = was
		l.Mu.Unlock()
	})
}

// guardMappingsHeld is the mappings guard pages hold, all heaps, and the
// guarded runs left without a guard page, ever.
func guardMappingsHeld() (held int64, skipped uint64) {
	l := &pageheap.GuardLedger
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.Held, l.Skipped
}
