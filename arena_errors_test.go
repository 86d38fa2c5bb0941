package offheap

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func expectPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		msg := fmt.Sprint(r)
		if !strings.HasPrefix(msg, "offheap:") || !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want one starting \"offheap:\" containing %q", msg, want)
		}
	}()
	f()
}

func TestArenaAfterRelease(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	a.Alloc(10)
	a.Release()
	for _, n := range []int{10, 0, 1000, 1 << 20} {
		expectPanic(t, "after Release", func() { a.Alloc(n) })
		if _, err := a.TryAlloc(n); !errors.Is(err, ErrClosed) || !strings.HasPrefix(err.Error(), "offheap:") {
			t.Errorf("TryAlloc(%d) after Release: %v, want an error wrapping ErrClosed", n, err)
		}
	}
	expectPanic(t, "Reset after Release", a.Reset)
	// A released arena that never allocated.
	b := h.NewArena()
	b.Release()
	expectPanic(t, "after Release", func() { b.Alloc(1) })
}

func TestArenaNegativeSize(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	a.Alloc(1) // so the fast path is live
	for _, n := range []int{-1, -15, -16, math.MinInt} {
		expectPanic(t, "negative size", func() { a.Alloc(n) })
		if _, err := a.TryAlloc(n); !errors.Is(err, ErrSize) {
			t.Errorf("TryAlloc(%d) = %v, want ErrSize", n, err)
		}
	}
	if _, err := a.TryAlloc(math.MaxInt); !errors.Is(err, ErrSize) {
		t.Errorf("TryAlloc(MaxInt) = %v, want ErrSize", err)
	}
	expectPanic(t, "invalid chunk size", func() { h.NewArenaSize(0) })
	// Chunks no region of the heap can hold, whose every TryAlloc would
	// fail, are refused at NewArenaSize.
	for _, n := range []uint64{1 << 46, 16 << 40, 16<<40 - pageSize, math.MaxInt} {
		if n <= math.MaxInt { // 64-bit ints
			expectPanic(t, "this heap's address space can hold", func() { h.NewArenaSize(int(n)) })
		}
	}
	a = h.NewArenaSize(1 << 30)
	if _, err := a.TryAlloc(100); err != nil {
		t.Fatalf("an arena of 1 GiB chunks: %v", err)
	}
	a.Release()
}

// TestArenaHeapFailure: when the heap refuses the arena a chunk, Alloc and
// TryAlloc fail with the heap's error and lose nothing handed out before;
// once the heap has room again, the arena recovers.
func TestArenaHeapFailure(t *testing.T) {
	h := newTestHeap(t, Options{})
	before := h.Stats().InUseBytes
	a := newArena(h, arenaChunkMin, false)
	var r recorder
	for i := range 2000 {
		r.add(t, a.Alloc(1+i%200))
	}
	h.failRuns(true)
	var errs int
	for i := range 2000 {
		b, err := a.TryAlloc(1 + i%200)
		if err != nil {
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("TryAlloc: %v, want the heap's ErrLimit", err)
			}
			errs++
			continue
		}
		r.add(t, b)
	}
	if errs == 0 {
		t.Fatal("the failing heap never failed an allocation")
	}
	expectPanic(t, "heap limit", func() {
		for {
			r.add(t, a.Alloc(100)) // another P's chunk may still have room
		}
	})
	if _, err := a.TryAlloc(3 * arenaChunkMin); !errors.Is(err, ErrLimit) {
		t.Fatalf("own-chunk TryAlloc: %v, want the heap's ErrLimit", err)
	}
	r.check(t) // nothing handed out before the failures was lost
	if got, want := a.Stats().AllocBytes, r.bytes(); got != want {
		t.Errorf("Stats().AllocBytes = %d, want %d", got, want)
	}
	h.failRuns(false)
	r.add(t, a.Alloc(100)) // recovers once the heap does
	r.check(t)
	a.Release()
	if got := h.Stats().InUseBytes; got != before {
		t.Errorf("heap InUseBytes after Release = %d, want %d: chunks not given back", got, before)
	}
}

// TestArenaProcsBeyondArray raises GOMAXPROCS after the per-P array was
// sized: the new Ps claim from the shared chunk.
func TestArenaProcsBeyondArray(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	var r recorder
	r.add(t, a.Alloc(8)) // sizes the per-P array for one P
	if n := a.procs.Load().n; n != 1 {
		t.Fatalf("per-P array for %d Ps, want 1", n)
	}
	runtime.GOMAXPROCS(8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				r.add(t, a.Alloc(1+(i*w)%300))
				if i%100 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	r.check(t)
	if got, want := a.Stats().AllocBytes, r.bytes(); got != want {
		t.Errorf("Stats().AllocBytes = %d, want %d", got, want)
	}
}
