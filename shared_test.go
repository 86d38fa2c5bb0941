package offheap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// sharedHeap is a fast heap closed at the end of the test.
func sharedHeap(t testing.TB) *Heap {
	t.Helper()
	h, err := NewHeap(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// sharedCheckedHeap is a checked heap, or skips the test where checked mode
// is not available yet.
func sharedCheckedHeap(t testing.TB) *Heap {
	t.Helper()
	h, err := NewHeap(Options{Checked: true})
	if err != nil {
		t.Skipf("checked mode unavailable: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// sharedLive is the number of live blocks of h.
func sharedLive(h *Heap) uint64 {
	s := h.Stats()
	return s.Allocs - s.Frees
}

// sharedPanic runs f and returns what it panicked with, as a string, or "".
func sharedPanic(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
			if msg == "" {
				msg = "(empty panic)"
			}
		}
	}()
	f()
	return ""
}

func TestSharedBasics(t *testing.T) {
	h := sharedHeap(t)
	base := sharedLive(h)
	for _, hot := range []bool{false, true} {
		for _, n := range []int{0, 1, 15, 16, 100, 4096, maxSmall + 1} {
			var opts []SharedOption
			if hot {
				opts = append(opts, Hot())
			}
			var calls int
			var seen []byte
			opts = append(opts, OnLastRelease(func(b []byte) {
				calls++
				seen = append([]byte(nil), b...) // b is freed after the callback
				// Heap locks are free here: these would deadlock otherwise.
				h.Free(h.Alloc(64))
				h.Stats()
				x := h.NewShared(8)
				x.Release()
			}))
			s := h.NewShared(n, opts...)
			if s == (Shared{}) {
				t.Fatal("NewShared returned the zero Shared")
			}
			b := s.Bytes()
			if len(b) != n || cap(b) != n {
				t.Fatalf("hot=%v n=%d: len %d cap %d", hot, n, len(b), cap(b))
			}
			for i, c := range b {
				if c != 0 {
					t.Fatalf("hot=%v n=%d: byte %d = %d, not zeroed", hot, n, i, c)
				}
			}
			for i := range b {
				b[i] = byte(i)
			}
			if got := s.Refs(); got != 1 {
				t.Fatalf("hot=%v: Refs = %d, want 1", hot, got)
			}
			var refs []Shared
			for i := range 10 {
				r := s.Retain()
				if n > 0 && &r.Bytes()[0] != &b[0] {
					t.Fatal("Retain changed the bytes")
				}
				refs = append(refs, r)
				if got := s.Refs(); got != i+2 {
					t.Fatalf("hot=%v: Refs = %d after %d Retains, want %d", hot, got, i+1, i+2)
				}
			}
			s.Release() // the creator first: seals a Hot handle
			if got := refs[0].Refs(); got != 10 {
				t.Fatalf("hot=%v: Refs = %d after the creator's Release, want 10", hot, got)
			}
			ReleaseShared(refs[1:])
			if calls != 0 {
				t.Fatalf("hot=%v: OnLastRelease ran with a reference left", hot)
			}
			for _, r := range refs[1:] {
				if r != (Shared{}) {
					t.Fatal("ReleaseShared did not zero the element")
				}
			}
			refs[0].Release()
			if calls != 1 || len(seen) != n {
				t.Fatalf("hot=%v n=%d: OnLastRelease ran %d times with %d bytes", hot, n, calls, len(seen))
			}
			for i := range seen {
				if seen[i] != byte(i) {
					t.Fatalf("OnLastRelease saw byte %d = %d", i, seen[i])
				}
			}
		}
	}
	if got := sharedLive(h); got != base {
		t.Fatalf("%d blocks live, want %d", got, base)
	}
}

func TestSharedZero(t *testing.T) {
	var z Shared
	if z != (Shared{}) || z.Bytes() != nil || z.Refs() != 0 || z.Retain() != (Shared{}) {
		t.Fatal("the zero Shared is not empty")
	}
	z.Release()
	ReleaseShared([]Shared{{}, {}})
	if StaticShared(nil) == (Shared{}) || len(StaticShared(nil).Bytes()) != 0 {
		t.Fatal("StaticShared(nil) is the zero Shared")
	}
	if n := int(unsafe.Sizeof(z)); n > 24 {
		t.Fatalf("Shared is %d bytes", n)
	}
}

// TestSharedStaticReadOnly retains and releases a Static handle over a page
// that faults on any write: a write would kill the test.
func TestSharedStaticReadOnly(t *testing.T) {
	n := osmem.PageSize
	p, err := osmem.Map(n)
	if err != nil {
		t.Skip(err)
	}
	defer osmem.Unmap(p, n)
	page := unsafe.Slice((*byte)(p), n)
	for i := range page {
		page[i] = byte(i * 7)
	}
	if err := osmem.ReadOnly(p, n); err != nil {
		t.Fatal(err)
	}
	s := StaticShared(page[:100])
	held := make([]Shared, 0, 64)
	for i := range 200_000 {
		held = append(held, s.Retain())
		if len(held) == cap(held) || i%3 == 0 {
			ReleaseShared(held)
			held = held[:0]
		}
	}
	ReleaseShared(held)
	for range 1000 {
		s.Release() // immortal: any number of Releases is fine
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50_000 {
				s.Retain().Release()
			}
		})
	}
	wg.Wait()
	if s.Refs() != math.MaxInt {
		t.Fatalf("Static Refs = %d", s.Refs())
	}
	b := s.Bytes()
	if len(b) != 100 || &b[0] != &page[0] || b[99] != page[99] {
		t.Fatal("Static Bytes is not b")
	}
}

func TestSharedReleasePastZero(t *testing.T) {
	for _, mode := range []string{"fast", "checked"} {
		t.Run(mode, func(t *testing.T) {
			h := sharedHeapFor(t, mode)
			check := func(what, msg, prefix string) {
				t.Helper()
				if !strings.HasPrefix(msg, prefix) {
					t.Fatalf("%s: panic %q, want prefix %q", what, msg, prefix)
				}
				if mode == "checked" && strings.HasPrefix(what, "hot") && !strings.Contains(msg, "TestSharedReleasePastZero") {
					t.Fatalf("%s: the allocation stack does not name the allocating test: %q", what, msg)
				}
				if mode == "checked" && !strings.Contains(msg, "allocated at:\n") {
					t.Fatalf("%s: checked-mode panic does not say where the handle was allocated: %q", what, msg)
				}
			}
			const past = "offheap: Shared.Release past zero"
			for _, hot := range []bool{false, true} {
				var opts []SharedOption
				if hot {
					opts = append(opts, Hot())
				}
				name := fmt.Sprintf("hot=%v", hot)

				// A copy released once too often right after the last Release.
				s := h.NewShared(32, opts...)
				c := s
				s.Release()
				check(name+" copy", sharedPanic(c.Release), past)

				// The same through a retained reference.
				s = h.NewShared(32, opts...)
				r := s.Retain()
				s.Release()
				r2 := r
				r.Release()
				check(name+" retained copy", sharedPanic(r2.Release), past)

				// Retain after the last Release.
				s = h.NewShared(32, opts...)
				c = s
				s.Release()
				check(name+" retain", sharedPanic(func() { c.Retain() }), "offheap: Shared.Retain of a released handle")
			}

			// Hot: surplus releases made in per-P mode are caught when the
			// creator seals, in fast mode; checked mode catches the surplus
			// Release itself (TestSharedHotOverRelease).
			s := h.NewShared(32, Hot())
			r := s.Retain()
			r.Release()
			if h.checked() { // checked mode, or every heap under offheapchecked
				if me := memoryError(t, r.Release); me.Kind != OverRelease {
					t.Fatalf("hot surplus: %v", me)
				}
				s.Release()
				return
			}
			r.Release()
			check("hot surplus", sharedPanic(s.Release), past)
		})
	}
}

// TestSharedStaleKeepsKey: in a fast heap a freed handle's count word holds
// the heap's double-free key (doublefree.go). A Release or Retain of a stale
// copy panics, and leaves the key as it was, so the block stays marked free.
func TestSharedStaleKeepsKey(t *testing.T) {
	if buildChecked {
		t.Skip("checked heaps keep no key")
	}
	h := sharedHeap(t)
	s := h.NewShared(32)
	stale, block := s, s.block()
	s.Release()
	if *keyWord(block) != h.key {
		t.Fatal("the freed handle's count word does not hold the key")
	}
	for _, op := range []struct {
		name, want string
		f          func()
	}{
		{"Release", "offheap: Shared.Release past zero", stale.Release},
		{"Retain", "offheap: Shared.Retain of a released handle", func() { stale.Retain() }},
	} {
		for range 2 {
			if msg := sharedPanic(op.f); !strings.HasPrefix(msg, op.want) {
				t.Fatalf("%s of a stale copy: %q", op.name, msg)
			}
			if *keyWord(block) != h.key {
				t.Fatalf("after a stale %s the count word is %#x, not the key", op.name, *keyWord(block))
			}
		}
	}
	wantDoubleFree(t, h, "Free of the freed handle's block", block, sharedHdr+32, func() { h.Free(bytesAt(block, sharedHdr+32)) })
}

// TestSharedReleaseAllRounds grows a slice of 4 handles and shrinks it with
// ReleaseShared 1000 times: nothing may stay live.
func TestSharedReleaseAllRounds(t *testing.T) {
	for _, mode := range []string{"fast", "checked"} {
		t.Run(mode, func(t *testing.T) {
			h := sharedHeapFor(t, mode)
			base := sharedLive(h)
			var released int
			var s []Shared
			for round := range 1000 {
				for i := range 4 {
					var opts []SharedOption
					switch (round + i) % 4 {
					case 1:
						opts = append(opts, Hot())
					case 2:
						opts = append(opts, OnLastRelease(func([]byte) { released++ }))
					}
					s = append(s, h.NewShared(8*(i+1), opts...))
				}
				ReleaseShared(s)
				s = s[:0]
			}
			if got := sharedLive(h); got != base {
				t.Fatalf("%d blocks live after 1000 rounds, want %d", got-base, 0)
			}
			if released != 1000 {
				t.Fatalf("%d OnLastRelease calls, want 1000", released)
			}
			if mode == "checked" {
				if err := h.Close(); err != nil {
					t.Fatalf("checked Close: %v", err)
				}
			}
		})
	}
}

// TestSharedOnReleaseTree releases trees of 100k handles whose OnLastRelease
// releases their children: no deadlock, no recursion per level, no leak.
func TestSharedOnReleaseTree(t *testing.T) {
	const n = 100_000
	shapes := []struct {
		name     string
		children func(i int) []int
	}{
		{"chain", func(i int) []int {
			if i+1 < n {
				return []int{i + 1}
			}
			return nil
		}},
		{"binary", func(i int) []int {
			var c []int
			for _, k := range []int{2*i + 1, 2*i + 2} {
				if k < n {
					c = append(c, k)
				}
			}
			return c
		}},
		{"star", func(i int) []int {
			if i == 0 {
				c := make([]int, n-1)
				for k := range c {
					c[k] = k + 1
				}
				return c
			}
			return nil
		}},
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			h := sharedHeap(t)
			base := sharedLive(h)
			baseBytes := h.Stats().InUseBytes
			kids := make([][]Shared, n)
			var calls, minDepth, maxDepth int
			var pcs [512]uintptr
			onRelease := func(b []byte) {
				calls++
				d := runtime.Callers(0, pcs[:])
				if calls == 1 {
					minDepth = d
				}
				maxDepth = max(maxDepth, d)
				id := binary.LittleEndian.Uint32(b)
				ReleaseShared(kids[id])
			}
			nodes := make([]Shared, n)
			for i := range nodes {
				opts := []SharedOption{OnLastRelease(onRelease)}
				if i%3 == 1 {
					opts = append(opts, Hot())
				}
				nodes[i] = h.NewShared(4+i%40, opts...)
				binary.LittleEndian.PutUint32(nodes[i].Bytes(), uint32(i))
			}
			for i := range nodes {
				for _, k := range shape.children(i) {
					kids[i] = append(kids[i], nodes[k])
				}
			}
			root := nodes[0]
			clear(nodes)
			done := make(chan struct{})
			go func() {
				defer close(done)
				root.Release()
			}()
			waitClosed(t, "releasing the tree: a deadlock", done)
			if calls != n {
				t.Fatalf("%d OnLastRelease calls, want %d", calls, n)
			}
			if maxDepth > minDepth+2 {
				t.Fatalf("callbacks ran %d frames deep, the first %d: recursion per level", maxDepth, minDepth)
			}
			if got := sharedLive(h); got != base {
				t.Fatalf("%d blocks live, want 0", got-base)
			}
			if got := h.Stats().InUseBytes; got != baseBytes {
				t.Fatalf("InUseBytes %d after the tree, %d before", got, baseBytes)
			}
		})
	}
}

// TestSharedOnReleasePanic: a callback that panics still frees its block and
// the pending ones, and the goroutine can release again afterwards.
func TestSharedOnReleasePanic(t *testing.T) {
	h := sharedHeap(t)
	base := sharedLive(h)
	var ran int
	child := h.NewShared(8, OnLastRelease(func([]byte) { ran++ }))
	parent := h.NewShared(8, OnLastRelease(func([]byte) {
		child.Release()
		panic("boom")
	}))
	if msg := sharedPanic(parent.Release); msg != "boom" {
		t.Fatalf("panic %q, want boom", msg)
	}
	if ran != 1 {
		t.Fatalf("the pending callback ran %d times", ran)
	}
	x := h.NewShared(8, OnLastRelease(func([]byte) { ran++ }))
	x.Release()
	if ran != 2 {
		t.Fatal("a later callback on the same goroutine did not run")
	}
	if got := sharedLive(h); got != base {
		t.Fatalf("%d blocks live, want 0", got-base)
	}
}

// TestSharedOnReleasePanics: any number of callbacks in one release tree
// may panic: every pending callback still runs, every block is freed, and
// the Release then panics with the first panic's value. Before the fix the
// second panic stopped the rest, whose blocks leaked.
func TestSharedOnReleasePanics(t *testing.T) {
	for _, parentPanics := range []bool{true, false} {
		h := sharedHeap(t)
		base := sharedLive(h)
		const n = 20
		ran := map[int]bool{}
		kids := make([]Shared, n)
		for i := range kids {
			kids[i] = h.NewShared(8, OnLastRelease(func([]byte) {
				ran[i] = true
				if i%3 == 0 {
					if i == 9 {
						x := h.NewShared(8, OnLastRelease(func([]byte) { ran[-1] = true; panic("grandchild") }))
						x.Release() // queued behind this callback
					}
					panic(fmt.Sprintf("kid %d", i))
				}
			}))
		}
		parent := h.NewShared(8, OnLastRelease(func([]byte) {
			ReleaseShared(kids) // all queued: they run after this callback, last first
			if parentPanics {
				panic("parent")
			}
		}))
		want := "kid 18" // the last queued runs first
		if parentPanics {
			want = "parent"
		}
		if msg := sharedPanic(parent.Release); msg != want {
			t.Errorf("Release panicked with %q, want the first panic, %q", msg, want)
		}
		if len(ran) != n+1 {
			t.Errorf("%d of %d callbacks ran", len(ran), n+1)
		}
		if got := sharedLive(h); got != base {
			t.Errorf("%d blocks live after the tree, want 0", got-base)
		}
	}
}

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

// TestSharedLeakReport: a leaked Shared is reported with the length
// NewShared was asked for and the address of its bytes, and its stack
// starts at the program's call, not in NewShared, plain or Hot.
func TestSharedLeakReport(t *testing.T) {
	for _, hot := range []bool{false, true} {
		h := checkedHeap(t, Options{})
		var opts []SharedOption
		if hot {
			opts = append(opts, Hot())
		}
		s := h.NewShared(64, opts...)
		var le *LeakError
		if err := h.Close(); !errors.As(err, &le) || len(le.Leaks) != 1 {
			t.Fatalf("hot=%v: Close: %v", hot, err)
		}
		l := le.Leaks[0]
		if l.Size != 64 || l.Addr != uintptr(s.data) {
			t.Fatalf("hot=%v: leak of %d bytes at %#x; the Shared has 64 bytes at %#x", hot, l.Size, l.Addr, uintptr(s.data))
		}
		if first, _, _ := strings.Cut(l.Stack, "\n"); !strings.Contains(first, "TestSharedLeakReport") {
			t.Fatalf("hot=%v: the leak's stack starts at %q:\n%s", hot, first, l.Stack)
		}
	}
}

// TestSharedStaleKeepsPageClean: after the last Release and a Trim, the
// freed block's pages are given back and counted clean; a stale Retain or
// Release (which panics) must not write to them, or a later zeroed Alloc
// that takes the pages without clearing them returns nonzero bytes.
func TestSharedStaleKeepsPageClean(t *testing.T) {
	if buildChecked {
		t.Skip("checked heaps check the registry before touching a handle")
	}
	stale := []struct {
		name string
		f    func(owner, retained Shared)
	}{
		{"Retain", func(s, _ Shared) { s.Retain() }},
		{"Release", func(s, _ Shared) { s.Release() }},
		{"retained Retain", func(_, r Shared) { r.Retain() }},
		{"retained Release", func(_, r Shared) { r.Release() }},
	}
	zeros := make([]byte, 393216)
	for _, n := range []int{32, 64 << 10, 300 << 10} {
		for _, hot := range []bool{false, true} {
			for _, op := range stale {
				h := sharedHeap(t)
				var opts []SharedOption
				if hot {
					opts = append(opts, Hot())
				}
				s := h.NewShared(n, opts...)
				r := s.Retain()
				s.Release()
				r.Release()
				h.Trim()
				if msg := sharedPanic(func() { op.f(s, r) }); !strings.HasPrefix(msg, "offheap: Shared.") {
					t.Fatalf("n=%d hot=%v: a stale %s: panic %q", n, hot, op.name, msg)
				}
				// Every zeroed block the heap hands out now reads as zeros,
				// the ones over the stale handle's pages included.
				for _, size := range []int{393216, n + sharedHdr + 4096, 8192, 64} {
					for range 64 {
						b := h.Alloc(size)
						if bytes.Equal(b, zeros[:size]) {
							continue
						}
						i := slices.IndexFunc(b, func(c byte) bool { return c != 0 })
						t.Fatalf("n=%d hot=%v: byte %d of a zeroed Alloc(%d) is %#x after a stale %s", n, hot, i, size, b[i], op.name)
					}
				}
				h.Close()
			}
		}
	}
}

// TestSharedFreeInOnRelease: a Free of a Shared's bytes inside its own
// OnRelease is refused with the Shared's message, and the block is still
// freed once, after the callback.
func TestSharedFreeInOnRelease(t *testing.T) {
	for _, mode := range []string{"fast", "checked"} {
		t.Run(mode, func(t *testing.T) {
			h := sharedHeapFor(t, mode)
			var msg string
			s := h.NewShared(32, OnLastRelease(func(b []byte) { msg = sharedPanic(func() { h.Free(b) }) }))
			s.Release()
			if !strings.Contains(msg, "the bytes of a Shared: a Shared is freed by its last Release, not by Free") {
				t.Fatalf("Free of a Shared's bytes in its OnRelease: panic %q", msg)
			}
			if st := h.Stats(); st.LiveBlocks != 0 {
				t.Fatalf("%d live blocks", st.LiveBlocks)
			}
		})
	}
}
