package offheap

// Hot handles of Shared: per-P counting under stress, and its misuse.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// sharedStressTrial is one trial of the Hot stress test: workers retain and
// release a Hot handle, each holding a few references at a time, while the
// creator releases at a random moment. The test keeps its own count of
// outstanding references (raised before each Retain, lowered before each
// Release), so when OnLastRelease runs legitimately it is exactly 0. It returns
// an error describing every violation: OnLastRelease early, twice or never, a
// panic in a worker, a leaked block.
func sharedStressTrial(h *Heap, rng *rand.Rand, workers, rounds int, growProcs bool, release func(Shared)) error {
	var (
		outstanding atomic.Int64
		calls       atomic.Int32
		mu          sync.Mutex
		errs        []error
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		errs = append(errs, fmt.Errorf(format, args...))
		mu.Unlock()
	}
	if growProcs {
		// Slots sized for 1 P; the workers run on up to 4: P ids beyond
		// the slots go to the count.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	base := sharedLive(h)
	outstanding.Store(1)
	s := h.NewShared(24, Hot(), OnLastRelease(func([]byte) {
		calls.Add(1)
		if o := outstanding.Load(); o != 0 {
			fail("OnLastRelease ran with %d references outstanding", o)
		}
	}))
	if growProcs {
		runtime.GOMAXPROCS(4)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		outstanding.Add(1)
		mine := s.Retain() // on the creator's P: a slot the workers drain
		seed := rng.Uint64()
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					fail("worker %d panicked: %v", w, r)
				}
			}()
			r := rand.New(rand.NewPCG(seed, 1))
			held := make([]Shared, 0, 8)
			<-start
			for range rounds {
				for range 1 + r.IntN(8) {
					outstanding.Add(1)
					held = append(held, mine.Retain())
				}
				if r.IntN(4) == 0 {
					runtime.Gosched() // migrate: retained on one P, released on another
				}
				for i := len(held) - 1; i >= 0; i-- {
					outstanding.Add(-1)
					held[i].Release()
				}
				held = held[:0]
			}
			outstanding.Add(-1)
			mine.Release()
		})
	}
	close(start)
	for range rng.IntN(2000) {
		runtime.Gosched() // a random moment: before, during or after the workers
	}
	outstanding.Add(-1)
	if msg := sharedPanic(func() { release(s) }); msg != "" {
		fail("the creator's Release panicked: %s", msg)
	}
	wg.Wait()
	if c := calls.Load(); c != 1 {
		fail("OnLastRelease ran %d times, want 1", c)
	}
	if got := sharedLive(h); got != base && len(errs) == 0 {
		fail("%d blocks live after the trial, want 0", got-base)
	}
	return errors.Join(errs...)
}

func TestSharedHotStress(t *testing.T) {
	h := sharedHeap(t)
	trials, rounds := 40, 300
	if raceOn || testing.Short() {
		trials, rounds = 8, 100
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range trials {
		if err := sharedStressTrial(h, rng, 8, rounds, i%4 == 3, Shared.Release); err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
	}
}

// TestSharedHotStressCatchesBrokenFold is the stress test's positive control:
// with a fold that loses one slot (releaseLosingSlot), the trial must report
// a failure within a bounded number of tries.
func TestSharedHotStressCatchesBrokenFold(t *testing.T) {
	if buildChecked {
		t.Skip("offheapchecked: every heap is checked, and a checked heap's Hot handles count on one count, with no fold")
	}
	if raceEnabled {
		// The broken fold frees the block while other goroutines still
		// release it: the detector reports those writes as a race, which
		// fails the test however the stress test itself fares.
		skipRace(t, "the planted early free races with the late releases, and the detector reports it")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const tries = 50
	for i := range tries {
		// A fresh heap each try: a broken fold may free the block early,
		// and the late releases then write to it.
		h, err := NewHeap(Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = sharedStressTrial(h, rng, 8, 100, false, Shared.releaseLosingSlot)
		h.Close()
		if err != nil {
			t.Logf("caught after %d tries: %v", i+1, err)
			return
		}
	}
	t.Fatalf("the stress test missed a broken fold %d times in a row", tries)
}

// TestSharedHotCreatorLast: the creator may be the last to release, after
// every other goroutine, and the slot counts still come out even.
func TestSharedHotCreatorLast(t *testing.T) {
	h := sharedHeap(t)
	base := sharedLive(h)
	var calls atomic.Int32
	s := h.NewShared(8, Hot(), OnLastRelease(func([]byte) { calls.Add(1) }))
	var wg sync.WaitGroup
	for range 4 {
		r := s.Retain()
		wg.Go(func() {
			for range 10_000 {
				r.Retain().Release()
			}
			r.Release()
		})
	}
	wg.Wait()
	if got := s.Refs(); got != 1 {
		t.Fatalf("Refs = %d before the creator's Release, want 1", got)
	}
	s.Release()
	if calls.Load() != 1 || sharedLive(h) != base {
		t.Fatalf("OnLastRelease ran %d times; %d blocks live", calls.Load(), sharedLive(h)-base)
	}
}

// sharedHeapFor is sharedHeap for mode "fast", sharedCheckedHeap otherwise.
func sharedHeapFor(t *testing.T, mode string) *Heap {
	t.Helper()
	if mode == "fast" {
		return sharedHeap(t)
	}
	return sharedCheckedHeap(t)
}

// TestSharedHotOverRelease: on a checked heap, a Release of a Hot handle's
// reference that was not held is a *MemoryError of kind OverRelease, made
// by that Release, with the stacks of the NewShared and of the Release, and
// the handle's count left as it was: a retained reference released twice
// while the creator's lives, and the creator's reference released twice.
// In fast mode the first goes unseen (Hot's doc says so).
func TestSharedHotOverRelease(t *testing.T) {
	h := checkedHeap(t, Options{})
	wantOver := func(what string, me *MemoryError, s Shared) {
		t.Helper()
		if me.Kind != OverRelease || me.Addr != uintptr(s.data) || me.Size != 64 {
			t.Fatalf("%s: %v", what, me)
		}
		wantStack(t, what+": alloc", me.AllocStack, "TestSharedHotOverRelease")
		wantStack(t, what+": release", me.AgainStack, "TestSharedHotOverRelease")
		for _, st := range []string{me.AllocStack, me.AgainStack} {
			if strings.Contains(st, "NewShared") || strings.Contains(st, "Shared.") {
				t.Errorf("%s: a stack starts in the package:\n%s", what, st)
			}
		}
		if !strings.Contains(me.Error(), "\nreleased at:\n") {
			t.Errorf("%s: %v", what, me)
		}
	}

	// A retained reference released in the creator's place: the total
	// would reach 0 with the creator's Release still to come.
	s := h.NewShared(64, Hot())
	r := s.Retain()
	r.Release()
	wantOver("retained reference released twice", memoryError(t, r.Release), s)
	if got := s.Refs(); got != 1 {
		t.Fatalf("Refs after the refused Release: %d, want 1", got)
	}
	r = s.Retain()
	r2 := r.Retain()
	r.Release()
	r2.Release()
	s.Release() // frees: the count was put back
	if live := sharedLive(h); live != 0 {
		t.Fatalf("%d blocks live after the last Release", live)
	}

	// The creator's reference released twice while a retained one lives.
	s = h.NewShared(64, Hot())
	r = s.Retain()
	s.Release()
	wantOver("creator released twice", memoryError(t, s.Release), s)
	if got := r.Refs(); got != 1 {
		t.Fatalf("Refs after the refused Release: %d, want 1", got)
	}
	r.Release()
	closeClean(t, h)
	if n := len(h.MemoryErrors()); n != 2 {
		t.Fatalf("MemoryErrors: %d, want the 2 over-releases", n)
	}

	// Fast mode: per-P counting sees nothing (as percpu_ref), until the
	// creator's Release finds the count below zero.
	if buildChecked {
		return
	}
	f := sharedHeap(t)
	s = f.NewShared(64, Hot())
	r = s.Retain()
	r.Release()
	if msg := sharedPanic(r.Release); msg != "" {
		t.Fatalf("fast mode saw a Hot handle's surplus Release: %s", msg)
	}
	if msg := sharedPanic(s.Release); !strings.HasPrefix(msg, "offheap: Shared.Release past zero") {
		t.Fatalf("the creator's Release after a surplus one: %q", msg)
	}
}
