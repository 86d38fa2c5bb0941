package offheap

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// closedErr runs f and returns the error it returned or panicked with, or
// an error saying what else happened.
func closedErr(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				err = fmt.Errorf("panicked with %v (%T), not an error", r, r)
				return
			}
			err = e
		}
	}()
	if err := f(); err != nil {
		return err
	}
	return errors.New("returned no error and did not panic")
}

// wantClosed fails the test unless f reports ErrClosed, by its error or by
// panicking with an error that wraps it, in a message that starts
// "offheap:".
func wantClosed(t *testing.T, what string, f func() error) {
	t.Helper()
	err := closedErr(f)
	if !errors.Is(err, ErrClosed) || !strings.HasPrefix(err.Error(), "offheap:") {
		t.Errorf("%s after Close: %v, want an error wrapping ErrClosed", what, err)
	}
}

// modeArms are the kinds of heap whose paths to memory differ: fast with
// and without magazines, checked, and sampled (a fast heap with a checker).
var modeArms = []struct {
	name string
	opts Options
}{
	{"fast", Options{}},
	{"nomag", Options{MagazineDepth: -1}},
	{"checked", Options{Checked: true}},
	{"sampled", Options{GuardOneIn: 3}},
}

// TestAfterClose calls every method of Arenas and Shareds made before the
// heap's Close: each reports ErrClosed. Before the fix they faulted, which
// kills the test binary.
func TestAfterClose(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h, err := NewHeap(arm.opts)
			if err != nil {
				t.Fatal(err)
			}
			used := h.NewArena()
			for i := range 2000 {
				used.Alloc(1 + i%500)
			}
			used.Alloc(100_000)
			fresh := h.NewArena() // never allocated
			released := h.NewArena()
			released.Alloc(10)
			released.Release()
			plain := h.NewShared(64)
			hot := h.NewShared(64, Hot())
			hotRef := hot.Retain()
			withCallback := h.NewShared(64, OnLastRelease(func([]byte) { t.Error("OnLastRelease ran after Close") }))
			static := StaticShared([]byte("static"))
			block := h.Alloc(64)
			big := h.Alloc(1 << 20)
			h.Close() // a checked heap reports the leaks; not this test's concern

			for name, a := range map[string]*Arena{"used": used, "fresh": fresh} {
				for _, n := range []int{0, 10, 5000, 100_000} {
					wantClosed(t, fmt.Sprintf("%s arena TryAlloc(%d)", name, n), func() error { _, err := a.TryAlloc(n); return err })
					wantClosed(t, fmt.Sprintf("%s arena Alloc(%d)", name, n), func() error { a.Alloc(n); return nil })
				}
				wantClosed(t, name+" arena Stats", func() error { a.Stats(); return nil })
				wantClosed(t, name+" arena Reset", func() error { a.Reset(); return nil })
				wantClosed(t, name+" arena Release", func() error { a.Release(); return nil })
				a.Release() // a second Release does nothing
				if s := a.Stats(); s != (ArenaStats{}) {
					t.Errorf("%s arena Stats after Release: %+v, want zero", name, s)
				}
				wantClosed(t, name+" arena TryAlloc after Release", func() error { _, err := a.TryAlloc(10); return err })
			}
			wantClosed(t, "released arena TryAlloc", func() error { _, err := released.TryAlloc(10); return err })
			wantClosed(t, "released arena Alloc", func() error { released.Alloc(10); return nil })
			released.Release()

			for name, s := range map[string]Shared{"plain": plain, "hot": hot, "hot reference": hotRef, "with OnLastRelease": withCallback} {
				wantClosed(t, name+" Shared.Retain", func() error { s.Retain(); return nil })
				wantClosed(t, name+" Shared.Release", func() error { s.Release(); return nil })
				wantClosed(t, name+" Shared.Refs", func() error { s.Refs(); return nil })
				wantClosed(t, name+" Shared.Bytes", func() error { s.Bytes(); return nil })
			}
			static.Retain().Release() // no heap: unaffected
			if string(static.Bytes()) != "static" {
				t.Error("a Static handle changed with a heap's Close")
			}

			wantClosed(t, "Alloc", func() error { h.Alloc(64); return nil })
			wantClosed(t, "AllocUnzeroed", func() error { h.AllocUnzeroed(64); return nil })
			wantClosed(t, "Free", func() error { h.Free(block); return nil })
			wantClosed(t, "Free of a large block", func() error { h.Free(big); return nil })
			wantClosed(t, "Realloc", func() error { h.Realloc(block, 100); return nil })
			wantClosed(t, "Realloc in place", func() error { h.Realloc(block, 60); return nil })
			wantClosed(t, "ReallocUnzeroed", func() error { h.ReallocUnzeroed(block, 100); return nil })
			wantClosed(t, "ReallocUnzeroed of a large block", func() error { h.ReallocUnzeroed(big, 100); return nil })
			wantClosed(t, "Relocate", func() error { h.Relocate(block); return nil })
			wantClosed(t, "RelocateAll", func() error { h.RelocateAll([][]byte{block, big}); return nil })
			wantClosed(t, "NewShared", func() error { h.NewShared(10); return nil })
			if _, ok := h.Lookup(addrOf(block)); ok {
				t.Error("Lookup after Close found a block")
			}
			h.Trim()
			h.Stats()
		})
	}
}

// TestCloseRacing closes heaps while goroutines allocate, free, and use
// arenas and Shareds on them (which the rules forbid): every call that
// meets the closed or closing heap must return or panic with ErrClosed,
// none may fault or hang. The workers never touch the bytes they hold,
// the one access that may fault after Close. Run it under -race -count 20.
func TestCloseRacing(t *testing.T) {
	trials := 24
	if testing.Short() {
		trials = 8
	}
	for trial := range trials {
		arm := modeArms[trial%len(modeArms)]
		if err := closeRacingTrial(arm.opts, uint64(trial)); err != nil {
			t.Fatalf("trial %d (%s): %v", trial, arm.name, err)
		}
	}
}

// TestNewLocalRacingClose makes Locals while the heap closes: a NewLocal
// that meets the closed heap returns ErrClosed, and one that got its state
// first is done writing it before Close unmaps it. When the state's
// samples were drawn after getCache let its lock go, where Close could
// unmap the state, 300 trials faulted in two runs of three.
func TestNewLocalRacingClose(t *testing.T) {
	trials := 1000
	if testing.Short() {
		trials = 300
	}
	callsRacingClose(t, trials, nil, func(h *Heap) error {
		l, err := h.TryNewLocal()
		if err == nil {
			defer func() { _ = recover() }() // after the heap's Close, Local.Close panics with ErrClosed
			l.Close()
		}
		return err
	})
}

// callsRacingClose runs trials heaps, each made ready by prepare (if not
// nil) and then closed while three goroutines call call on it until it
// returns an error, which must be ErrClosed.
func callsRacingClose(t *testing.T, trials int, prepare func(*Heap), call func(*Heap) error) {
	t.Helper()
	for trial := range trials {
		h, err := NewHeap(Options{})
		if err != nil {
			t.Fatal(err)
		}
		if prepare != nil {
			prepare(h)
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for {
					if err := call(h); err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Errorf("a call racing Close: %v", err)
						}
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(trial%7) * 20 * time.Microsecond)
		h.Close()
		wg.Wait()
	}
}

// TestCallsRacingClose is TestCloseRacing for the calls it leaves out:
// the constructors (NewArena, NewLocal, NewShared, NewBuffer) with their
// own Reset, Flush, Close and Release, and the reports (ResidentBytes,
// HugePageBytes, RelocateGain, Lookup, UsableSize, WriteProfile,
// MemoryErrors, Leaks), each racing the heap's Close in four goroutines:
// every call returns, or fails or panics with ErrClosed.
func TestCallsRacingClose(t *testing.T) {
	arms := []Options{{}, {Checked: true}, {GuardOneIn: 3}, {HugePages: true}, {Limit: 64 << 20}}
	trials := 400
	if testing.Short() {
		trials = 150
	}
	for trial := range trials {
		h, err := NewHeap(arms[trial%len(arms)])
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				defer func() {
					if r := recover(); r != nil {
						if err, ok := r.(error); ok && errors.Is(err, ErrClosed) && strings.HasPrefix(err.Error(), "offheap:") {
							return
						}
						t.Errorf("worker %d: %v", w, r)
					}
				}()
				rng := rand.New(rand.NewPCG(uint64(trial), uint64(w)))
				for {
					switch rng.IntN(14) {
					case 0:
						a := h.NewArena()
						a.Alloc(1 + rng.IntN(5000))
						a.Reset()
						a.Alloc(10)
						a.Release()
					case 1:
						l := h.NewLocal()
						l.Free(l.Alloc(100))
						l.Flush()
						l.Close()
					case 2:
						s := h.NewShared(10)
						s.Release()
					case 3:
						if _, err := h.ResidentBytes(); err != nil && !errors.Is(err, ErrClosed) {
							t.Errorf("ResidentBytes: %v", err)
						}
					case 4:
						h.HugePageBytes()
					case 5:
						h.RelocateGain()
					case 6:
						h.Stats()
						h.InUse()
					case 7:
						b := h.Alloc(1 + rng.IntN(300000))
						h.Lookup(addrOf(b))
						h.UsableSize(b)
						h.Free(b)
					case 8:
						h.Trim()
					case 9:
						h.WriteProfile(io.Discard)
					case 10:
						buf := h.NewBuffer(10)
						buf.Write(make([]byte, 100))
						buf.Free()
					case 11:
						h.MemoryErrors()
						h.Leaks()
					case 12:
						b := h.Alloc(64)
						r := h.Ref(b)
						h.FreeRef(r)
					case 13:
						if _, err := h.TryAlloc(1 << 20); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrLimit) {
							t.Errorf("TryAlloc: %v", err)
						}
					}
					if h.closed.Load() && rng.IntN(50) == 0 {
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(trial%9) * 50 * time.Microsecond)
		h.Close()
		wg.Wait()
	}
}

// TestResidentBytesRacingClose: ResidentBytes racing Close returns a count
// or ErrClosed. It asked the kernel about regions Close had unmapped, and
// returned mincore's ENOMEM, in 32 to 48 of 300 trials in each of five
// runs, before it ran between enter and exit.
func TestResidentBytesRacingClose(t *testing.T) {
	trials := 300
	if testing.Short() {
		trials = 100
	}
	callsRacingClose(t, trials,
		func(h *Heap) { h.Alloc(4 << 20) }, // a run for mincore to read
		func(h *Heap) error {
			_, err := h.ResidentBytes()
			return err
		})
}

// closeRacingTrial is one trial of TestCloseRacing: it returns what went
// wrong.
func closeRacingTrial(opts Options, seed uint64) error {
	h, err := NewHeap(opts)
	if err != nil {
		return err
	}
	arena := h.NewArena()
	hot := h.NewShared(64, Hot())
	const workers = 6
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var ops atomic.Int64
	for w := range workers {
		wg.Go(func() {
			defer func() {
				r := recover()
				if r == nil {
					return
				}
				if err, ok := r.(error); ok && errors.Is(err, ErrClosed) && strings.HasPrefix(err.Error(), "offheap:") {
					return // the heap was closed under the call: as it must be
				}
				errs <- fmt.Errorf("worker %d panicked with %v", w, r)
			}()
			closeRacingWorker(h, arena, hot, rand.New(rand.NewPCG(seed, uint64(w))), &ops)
		})
	}
	// Close once the workers are under way, after a varying delay.
	for deadline := time.Now().Add(time.Second); ops.Load() < workers*100 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Microsecond)
	}
	time.Sleep(time.Duration(seed%5) * 300 * time.Microsecond)
	h.Close() // a checked heap reports the workers' blocks as leaks
	// A worker that never returns is a hang: the test binary's -timeout
	// reports it with every goroutine's stack, on any machine's speed.
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// closeRacingWorker uses h until a call reports ErrClosed (by panicking, or
// by an error it panics with), holding some blocks, arena allocations and
// Shared references at a time.
func closeRacingWorker(h *Heap, arena *Arena, hot Shared, rng *rand.Rand, ops *atomic.Int64) {
	var live [][]byte
	var refs []Shared
	cache := h.NewLocal()
	size := func() int {
		if rng.IntN(20) == 0 {
			return maxSmall + rng.IntN(100_000)
		}
		return 1 + rng.IntN(600)
	}
	for {
		ops.Add(1)
		switch k := rng.IntN(20); {
		case k < 6:
			b, err := h.TryAlloc(size())
			if err != nil {
				panic(err)
			}
			live = append(live, b)
		case k < 7:
			live = append(live, h.AllocUnzeroed(size()))
		case k < 11 && len(live) > 0:
			j := rng.IntN(len(live))
			h.Free(live[j])
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
		case k < 12 && len(live) > 0:
			j := rng.IntN(len(live))
			switch rng.IntN(3) {
			case 0:
				live[j] = h.Realloc(live[j], size())
			case 1:
				live[j], _ = h.Relocate(live[j]) // its dense check unpinned, as Free's
			default:
				h.RelocateAll(live[j:min(j+8, len(live))])
			}
		case k < 14:
			if _, err := arena.TryAlloc(size()); err != nil {
				panic(err)
			}
		case k < 15:
			refs = append(refs, h.NewShared(1+rng.IntN(100)), hot.Retain())
		case k < 17 && len(refs) > 0:
			j := rng.IntN(len(refs))
			refs[j].Retain().Release()
			refs[j].Refs()
			refs[j].Bytes()
			refs[j].Release()
			refs[j] = refs[len(refs)-1]
			refs = refs[:len(refs)-1]
		case k < 18:
			h.Stats()
			h.InUse()
			arena.Stats()
			if len(live) > 0 {
				h.Bytes(h.Ref(live[rng.IntN(len(live))]))
			}
		case k < 19 && rng.IntN(20) == 0:
			h.Trim()
		case k < 19:
			cache.Free(cache.AllocUnzeroed(size()))
			live = append(live, cache.Alloc(size()))
			if j := rng.IntN(len(live)); rng.IntN(2) == 0 {
				cache.Free(live[j])
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
			}
		case rng.IntN(50) == 0:
			cache.Flush()
		}
	}
}
