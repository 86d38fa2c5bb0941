package offheap

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// arms are the heap configurations every behavioural test runs against.
var arms = []struct {
	name string
	opts Options
}{
	{"magazines", Options{}},
	{"nomag", Options{MagazineDepth: -1}},
	{"depth1", Options{MagazineDepth: 1}},
}

// unprofiled is opts without the allocation profile, for the tests of what
// a fast heap's blocks are and how the census counts them: the profile
// gives each sampled block a page run of its own (profile.go).
func unprofiled(opts Options) Options {
	opts.ProfileBytes = -1
	return opts
}

func newTestHeap(t testing.TB, opts Options) *Heap {
	t.Helper()
	h, err := NewHeap(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// sizes covers every class boundary and a few large sizes.
func testSizes() []int {
	var s []int
	for c := 1; c < numClasses; c++ {
		n := int(classSize[c])
		s = append(s, n, n-1)
		if c > 1 {
			s = append(s, int(classSize[c-1])+1)
		}
	}
	return append(s, 1, maxSmall+1, 100_000, 1<<20+3)
}

func TestAllocShape(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			for _, n := range testSizes() {
				for _, alloc := range []func(int) []byte{h.Alloc, h.AllocUnzeroed} {
					b := alloc(n)
					if len(b) != n || cap(b) != n {
						t.Fatalf("Alloc(%d): len %d cap %d", n, len(b), cap(b))
					}
					align := uintptr(16)
					if n <= 8 {
						align = 8
					}
					if a := addrOf(b); a%align != 0 {
						t.Fatalf("Alloc(%d) = %#x, not %d-aligned", n, a, align)
					}
					for i := range b {
						b[i] = 0xAB
					}
					h.Free(b)
				}
				// Zeroed even though the same block was just dirtied.
				b := h.Alloc(n)
				for i, x := range b {
					if x != 0 {
						t.Fatalf("Alloc(%d)[%d] = %#x, want 0", n, i, x)
					}
				}
				h.Free(b)
			}
			if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != s.Frees {
				t.Fatalf("after freeing all: %+v", s)
			}
		})
	}
}

func TestAllocZero(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.Alloc(0)
	if b == nil || len(b) != 0 {
		t.Fatalf("Alloc(0) = %v (nil %v)", b, b == nil)
	}
	h.Free(b)
	h.Free(nil)
	if s := h.Stats(); s.Allocs != 0 || s.Frees != 0 {
		t.Fatalf("zero-size operations were counted: %+v", s)
	}
}

// census is what a test expects Stats to say.
type census struct {
	allocs, frees, large uint64
	inUse                uint64
}

// checkCensus compares Stats with the test's own count of operations.
func checkCensus(s Stats, want census) error {
	var errs []error
	if s.Allocs != want.allocs {
		errs = append(errs, fmt.Errorf("Allocs = %d, want %d", s.Allocs, want.allocs))
	}
	if s.Frees != want.frees {
		errs = append(errs, fmt.Errorf("Frees = %d, want %d", s.Frees, want.frees))
	}
	if s.Large != want.large {
		errs = append(errs, fmt.Errorf("Large = %d, want %d", s.Large, want.large))
	}
	if s.InUseBytes != want.inUse {
		errs = append(errs, fmt.Errorf("InUseBytes = %d, want %d", s.InUseBytes, want.inUse))
	}
	if sum := s.MagazineHits + s.LocalHits + s.CentralHits + s.Fresh + s.Large; sum != s.Allocs {
		errs = append(errs, fmt.Errorf("MagazineHits+LocalHits+CentralHits+Fresh+Large = %d, Allocs = %d", sum, s.Allocs))
	}
	var ca, cf uint64
	for _, c := range s.Classes {
		ca += c.Allocs
		cf += c.Frees
		if c.InUse != c.Allocs-c.Frees {
			errs = append(errs, fmt.Errorf("class %d: InUse %d != Allocs %d - Frees %d", c.Size, c.InUse, c.Allocs, c.Frees))
		}
	}
	if ca+s.Large != s.Allocs {
		errs = append(errs, fmt.Errorf("class Allocs sum %d + Large %d != Allocs %d", ca, s.Large, s.Allocs))
	}
	return errors.Join(errs...)
}

// largeBlock reports whether a block of n bytes is a large one (page run),
// as Stats.Large counts them: in checked mode, its canary counts too.
func largeBlock(n int) bool {
	if buildChecked {
		n += canaryLen
	}
	return n > maxSmall
}

// blockBytes is the bytes a block of n occupies: its class size or pages.
func blockBytes(n int) uint64 {
	if buildChecked {
		return blockBytesChecked(n) // a trailing canary, and a minimum (checked_small.go)
	}
	if n > maxSmall {
		return uint64((n + pageSize - 1) &^ (pageSize - 1))
	}
	return uint64(classSize[sizeClass(n)])
}

func TestCensusExact(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			var want census
			var live [][]byte
			for i := range 20000 {
				n := 1 + (i*7919)%5000
				if i%97 == 0 {
					n = maxSmall + 1 + i
					want.large++
				}
				live = append(live, h.Alloc(n))
				want.allocs++
				want.inUse += blockBytes(n)
				if i%3 != 0 {
					b := live[0]
					live = live[1:]
					h.Free(b)
					want.frees++
					want.inUse -= blockBytes(len(b))
				}
			}
			if err := checkCensus(h.Stats(), want); err != nil {
				t.Fatal(err)
			}
			s := h.Stats()
			if arm.opts.MagazineDepth < 0 && s.MagazineHits != 0 {
				t.Fatalf("magazines off, but MagazineHits = %d", s.MagazineHits)
			}
			if arm.opts.MagazineDepth >= 0 && s.MagazineHits == 0 && !buildChecked { // checked: no magazines
				t.Fatalf("magazines on, but MagazineHits = 0")
			}
			for _, b := range live {
				h.Free(b)
				want.frees++
				want.inUse -= blockBytes(len(b))
			}
			if err := checkCensus(h.Stats(), want); err != nil {
				t.Fatal(err)
			}
			h.Close()
			if err := checkCensus(h.Stats(), want); err != nil {
				t.Fatalf("after Close: %v", err)
			}
		})
	}
}

// TestCensusControl is the positive control for checkCensus: one operation
// the census did not see must be reported.
func TestCensusControl(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.Alloc(64)
	h.Free(b)
	b = h.Alloc(64)                     // a magazine hit
	want := census{allocs: 1, frees: 1} // misses the second Alloc
	if err := checkCensus(h.Stats(), want); err == nil {
		t.Fatal("checkCensus accepted a census one Alloc short")
	}
	h.Free(b)
}

// mustPanic runs f and returns the message it panicked with, or fails.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("did not panic")
		}
		msg = fmt.Sprint(r)
		if !strings.HasPrefix(msg, "offheap: ") {
			t.Fatalf("panic message %q does not start with \"offheap: \"", msg)
		}
	}()
	f()
	return ""
}

// TestMustPanicControl: a function that does not panic must fail mustPanic.
func TestMustPanicControl(t *testing.T) {
	var inner testing.T
	done := make(chan bool)
	go func() {
		defer func() { done <- inner.Failed() }()
		mustPanic(&inner, func() {})
	}()
	if !<-done {
		t.Fatal("mustPanic passed a function that did not panic")
	}
}

func TestBadInput(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			if msg := mustPanic(t, func() { h.Alloc(-1) }); !strings.Contains(msg, "negative size -1") {
				t.Errorf("Alloc(-1): %q", msg)
			}
			if _, err := h.TryAlloc(-5); !errors.Is(err, ErrSize) {
				t.Errorf("TryAlloc(-5) error = %v, want ErrSize", err)
			}
			if _, err := h.TryAlloc(math.MaxInt); !errors.Is(err, ErrSize) && !errors.Is(err, ErrLimit) {
				t.Errorf("TryAlloc(MaxInt) error = %v", err)
			}
			goSlice := make([]byte, 64)
			if msg := mustPanic(t, func() { h.Free(goSlice) }); !strings.Contains(msg, "did not allocate") {
				t.Errorf("Free(Go slice): %q", msg)
			}
			for _, n := range []int{64, 1000, maxSmall, maxSmall + 1, 1 << 20} {
				b := h.Alloc(n)
				if msg := mustPanic(t, func() { h.Free(b[1:]) }); !strings.Contains(msg, "not the start of a block") {
					t.Errorf("Free(b[1:]) of %d bytes: %q", n, msg)
				}
				if n > pageSize {
					if msg := mustPanic(t, func() { h.Free(b[pageSize:]) }); !strings.Contains(msg, "not the start of a block") {
						t.Errorf("Free(b[pageSize:]) of %d bytes: %q", n, msg)
					}
				}
				h.Free(b) // the heap is intact: the real start still frees
			}
			// A page the heap never handed out.
			b := h.Alloc(1 << 20)
			h.Free(b)
			if msg := mustPanic(t, func() { h.Free(b) }); !strings.Contains(msg, "not allocated") {
				t.Errorf("Free of a freed large block: %q", msg)
			}
			if s := h.Stats(); s.InUseBytes != 0 {
				t.Fatalf("bad input leaked: %+v", s)
			}
			// Another heap's block.
			other := newTestHeap(t, arm.opts)
			ob := other.Alloc(64)
			if msg := mustPanic(t, func() { h.Free(ob) }); !strings.Contains(msg, "did not allocate") {
				t.Errorf("Free of another heap's block: %q", msg)
			}
			other.Free(ob)
		})
	}
}

func TestLimit(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			const limit = 4 << 20
			h := newTestHeap(t, Options{MagazineDepth: arm.opts.MagazineDepth, Limit: limit})
			var live [][]byte
			var err error
			for {
				var b []byte
				if b, err = h.TryAlloc(100_000); err != nil {
					break
				}
				live = append(live, b)
			}
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("TryAlloc past the limit: %v, want ErrLimit", err)
			}
			if s := h.Stats(); s.MappedBytes > limit {
				t.Fatalf("MappedBytes %d above Limit %d", s.MappedBytes, limit)
			}
			if len(live) < limit/100_000/2 {
				t.Fatalf("only %d blocks of 100000 bytes fit in %d", len(live), limit)
			}
			if msg := mustPanic(t, func() { h.Alloc(100_000) }); !strings.Contains(msg, "limit") {
				t.Errorf("Alloc past the limit: %q", msg)
			}
			// Small blocks hit the same limit.
			var small [][]byte
			for {
				b, err := h.TryAlloc(64)
				if err != nil {
					if !errors.Is(err, ErrLimit) {
						t.Fatalf("small TryAlloc past the limit: %v", err)
					}
					break
				}
				small = append(small, b)
			}
			// The heap stays usable: free some, allocate again.
			for _, b := range live {
				h.Free(b)
			}
			for _, b := range small {
				h.Free(b)
			}
			b, err := h.TryAlloc(100_000)
			if err != nil {
				t.Fatalf("after freeing, TryAlloc: %v", err)
			}
			h.Free(b)
			if s := h.Stats(); s.InUseBytes != 0 {
				t.Fatalf("InUseBytes = %d after freeing everything", s.InUseBytes)
			}
		})
	}
}

func TestClose(t *testing.T) {
	h, err := NewHeap(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := h.Alloc(64)
	h.Free(b)
	big := h.Alloc(1 << 20)
	if err := h.Close(); buildChecked {
		// Checked mode reports big as a leak (checked.go).
		var le *LeakError
		if !errors.As(err, &le) || len(le.Leaks) != 1 || le.Leaks[0].Size != 1<<20 {
			t.Fatalf("checked Close: %v, want a LeakError for big", err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, n := range []int{64, 1 << 20} {
		if _, err := h.TryAlloc(n); !errors.Is(err, ErrClosed) {
			t.Errorf("TryAlloc(%d) after Close: %v, want ErrClosed", n, err)
		}
		if msg := mustPanic(t, func() { h.Alloc(n) }); !strings.Contains(msg, "closed") {
			t.Errorf("Alloc(%d) after Close: %q", n, msg)
		}
	}
	if msg := mustPanic(t, func() { h.Free(big) }); !strings.Contains(msg, "closed") {
		t.Errorf("Free after Close: %q", msg)
	}
	h.Trim() // a no-op, not a crash
	if s := h.Stats(); s.Allocs != 2 || s.Frees != 1 {
		t.Errorf("Stats after Close: %+v", s)
	}
}

// TestTrimAllPs fills the magazines of several Ps (and, in checked mode,
// their quarantine rings) and shows that Trim empties every one of them,
// not only the calling P's. The positive control is draining the calling
// P's alone.
func TestTrimAllPs(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs 2 Ps")
	}
	// held counts the Ps whose magazine (and, in checked mode, quarantine
	// ring) holds blocks, and the blocks in every magazine and ring, in
	// service or not.
	held := func(h *Heap) (ps int, blocks uint32) {
		count := func(m *magazine) (n uint32) {
			for c := 1; c < numClasses; c++ {
				n += m.cls[c].n
			}
			return n
		}
		for _, m := range h.mags.all {
			blocks += count(m)
		}
		for i := range maxProcs {
			var n uint32
			if m := h.mags.at[i].Load(); m != nil {
				n += count(m)
			}
			if h.chk != nil {
				if p := h.chk.q.rings.at[i].Load(); p != nil {
					n += p.n
				}
			}
			if n > 0 {
				ps++
			}
		}
		if h.chk != nil {
			for _, p := range h.chk.q.rings.all {
				blocks += p.n
			}
		}
		return ps, blocks
	}
	fill := func(h *Heap) {
		w := runtime.GOMAXPROCS(0)
		var started atomic.Int32
		var wg sync.WaitGroup
		for range w {
			wg.Go(func() {
				started.Add(1)
				for started.Load() < int32(w) {
					// spin, so that every worker holds a P of its own
				}
				var bs [][]byte
				for i := range 300 {
					bs = append(bs, h.Alloc(16+i%700))
				}
				for _, b := range bs {
					h.Free(b)
				}
			})
		}
		wg.Wait()
	}
	h := newTestHeap(t, Options{ReleaseDelay: time.Hour})
	fill(h)
	if ps, _ := held(h); ps < 2 {
		t.Skipf("the workers left blocks on %d P(s): they did not run on 2 Ps", ps)
	}
	h.Trim()
	if ps, blocks := held(h); blocks != 0 {
		t.Fatalf("after Trim %d blocks are still held, on %d P(s)", blocks, ps)
	}
	if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != s.Frees {
		t.Fatalf("Stats after Trim: %+v", s)
	}
	// The Ps get their magazines back, and the census goes on.
	fill(h)
	if s := h.Stats(); s.Allocs != s.Frees || s.Allocs != uint64(2*300*runtime.GOMAXPROCS(0)) || s.MagazineHits == 0 {
		t.Fatalf("Stats after a second fill: Allocs %d, Frees %d, MagazineHits %d", s.Allocs, s.Frees, s.MagazineHits)
	}

	// Control: draining the calling P's magazine (and ring) alone leaves
	// the others.
	h2 := newTestHeap(t, Options{ReleaseDelay: time.Hour})
	fill(h2)
	if ps, _ := held(h2); ps >= 2 {
		if h2.chk != nil {
			h2.chk.flushLocal()
		} else {
			h2.drainLocalMagazine()
		}
		if _, blocks := held(h2); blocks == 0 {
			t.Fatal("control: draining one P emptied every magazine: the test cannot tell")
		}
	}
}

func TestTrimReleases(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, Options{MagazineDepth: arm.opts.MagazineDepth, ReleaseDelay: time.Hour})
			var live [][]byte
			for i := range 4000 {
				live = append(live, h.Alloc(16+i%2000), h.Alloc(50_000))
			}
			for _, b := range live {
				h.Free(b)
			}
			before := h.Stats()
			h.Trim()
			after := h.Stats()
			if after.ReleasedBytes <= before.ReleasedBytes || after.MappedBytes >= before.MappedBytes/4 {
				t.Fatalf("Trim released too little: before mapped %d released %d, after mapped %d released %d",
					before.MappedBytes, before.ReleasedBytes, after.MappedBytes, after.ReleasedBytes)
			}
			// What Trim leaves: at most a span per class, and the heap's
			// own metadata.
			reach := uint64((numClasses-1)*11*pageSize) + 1<<20
			if after.MappedBytes > reach {
				t.Fatalf("after Trim %d bytes still mapped, more than %d", after.MappedBytes, reach)
			}
			// Released memory is reused, and reads as zero.
			b := h.Alloc(50_000)
			for _, x := range b {
				if x != 0 {
					t.Fatal("reused released memory is not zero")
				}
			}
			h.Free(b)
		})
	}
}

func TestReleaseDelay(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode keeps freed blocks in quarantine until pushed out, Trim or Close")
	}
	h := newTestHeap(t, Options{ReleaseDelay: 20 * time.Millisecond})
	b := h.Alloc(1 << 20)
	h.Free(b)
	if s := h.Stats(); s.ReleasedBytes != 0 {
		t.Fatalf("released at once: %+v", s)
	}
	waitFor(t, func() string {
		return fmt.Sprintf("free pages not released after the delay: %+v", h.Stats())
	}, func() bool { return h.Stats().ReleasedBytes >= 1<<20 })
}

// TestFreeOnlyGoroutineBounded: one goroutine allocates, another only frees.
// The freeing side's magazine must hand blocks on, not hoard them: mapped
// memory stays bounded however long the run.
func TestFreeOnlyGoroutineBounded(t *testing.T) {
	h := newTestHeap(t, Options{})
	ch := make(chan []byte, 64)
	done := make(chan struct{})
	go func() {
		for b := range ch {
			h.Free(b)
		}
		close(done)
	}()
	rounds := 200_000
	if testing.Short() {
		rounds = 50_000
	}
	var peak uint64
	for i := range rounds {
		ch <- h.Alloc(64 + i%512)
		if i%10_000 == 0 {
			peak = max(peak, h.Stats().MappedBytes)
		}
	}
	close(ch)
	<-done
	bound := uint64(runtime.GOMAXPROCS(0)*MagazineBound(0)+(numClasses-1)*depotBytes) + 8<<20
	if peak > bound {
		t.Fatalf("producer/consumer mapped %d bytes, bound %d", peak, bound)
	}
	if s := h.Stats(); s.InUseBytes != 0 {
		t.Fatalf("InUseBytes %d", s.InUseBytes)
	}
}

func TestGOMAXPROCSChange(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{}))
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	var want census
	for _, p := range []int{1, 8, 3, 1, old} {
		runtime.GOMAXPROCS(p)
		done := make(chan [][]byte)
		for range p {
			go func() {
				var kept [][]byte
				for i := range 2000 {
					b := h.Alloc(8 + i%300)
					if i%2 == 0 {
						h.Free(b)
					} else {
						kept = append(kept, b)
					}
				}
				done <- kept
			}()
		}
		for range p {
			for _, b := range <-done {
				h.Free(b)
			}
		}
		want.allocs += uint64(2000 * p)
		want.frees += uint64(2000 * p)
	}
	if err := checkCensus(h.Stats(), want); err != nil {
		t.Fatal(err)
	}
}

func TestMagazineBound(t *testing.T) {
	if MagazineBound(-1) != 0 {
		t.Fatal("magazines off must hold nothing")
	}
	if a, b := MagazineBound(1), MagazineBound(DefaultMagazineDepth); a >= b {
		t.Fatalf("bound at depth 1 (%d) not below default (%d)", a, b)
	}
	if buildChecked {
		t.Skip("checked mode has no magazines")
	}
	// Fill one P's magazines to the brim: every class allocated past its
	// capacity, then freed on one goroutine with the P held (LockOSThread
	// does not pin the P, so measure MagazineBytes, which is per heap).
	h := newTestHeap(t, Options{})
	for c := 1; c < numClasses; c++ {
		var live [][]byte
		for range 2 * maxDepth {
			live = append(live, h.Alloc(int(classSize[c])))
		}
		for _, b := range live {
			h.Free(b)
		}
	}
	s := h.Stats()
	if s.MagazineBytes == 0 || s.MagazineBytes > uint64(runtime.GOMAXPROCS(0)*MagazineBound(0)) {
		t.Fatalf("MagazineBytes %d, bound %d per P", s.MagazineBytes, MagazineBound(0))
	}
}

func TestNewHeapOptions(t *testing.T) {
	if _, err := NewHeap(Options{MagazineDepth: MaxMagazineDepth + 1}); err == nil {
		t.Error("MagazineDepth above the maximum accepted")
	}
	if _, err := NewHeap(Options{Limit: -1}); err == nil {
		t.Error("negative Limit accepted")
	}
	if h, err := NewHeap(Options{GuardPages: true}); err != nil || h.chk == nil || !h.opts.Checked {
		t.Errorf("GuardPages alone: %v, want a checked heap", err)
	} else {
		h.Close()
	}
	h := newTestHeap(t, Options{MagazineDepth: MaxMagazineDepth})
	h.Free(h.Alloc(64))
}

func TestDefault(t *testing.T) {
	resetDefault()
	t.Cleanup(resetDefault) // for ExampleSetDefaultOptions, which must come first
	h := Default()
	if h != Default() {
		t.Fatal("Default returned two heaps")
	}
	b := h.Alloc(100)
	h.Free(b)
}

// TestSetDefaultOptions: Default is created with the options set before its
// first use; setting others afterwards is an error that says so, and bad
// options are refused before they can make Default panic.
func TestSetDefaultOptions(t *testing.T) {
	resetDefault()
	t.Cleanup(resetDefault)
	if err := SetDefaultOptions(Options{Limit: -1}); err == nil || !strings.HasPrefix(err.Error(), "offheap: negative Limit") {
		t.Fatalf("SetDefaultOptions with a negative Limit: %v", err)
	}
	opts := Options{Limit: 32 << 20, MagazineDepth: 16}
	if err := SetDefaultOptions(opts); err != nil {
		t.Fatal(err)
	}
	h := Default()
	if _, err := h.TryAlloc(64 << 20); !errors.Is(err, ErrLimit) {
		t.Fatalf("Default ignores the Limit it was set: TryAlloc(64 MiB) = %v", err)
	}
	if h.opts.MagazineDepth != 16 {
		t.Fatalf("Default ignores the MagazineDepth it was set: %+v", h.opts)
	}
	if err := SetDefaultOptions(opts); err != nil {
		t.Fatalf("setting the options Default has again: %v", err)
	}
	err := SetDefaultOptions(Options{})
	if err == nil || !strings.Contains(err.Error(), "before the first use of Default") {
		t.Fatalf("SetDefaultOptions after Default: %v", err)
	}
	if Default() != h {
		t.Fatal("a refused SetDefaultOptions changed the default heap")
	}
}

// TestStatsString: the one-line summary names every count and byte figure,
// bytes in the largest unit they fill.
func TestStatsString(t *testing.T) {
	s := Stats{Allocs: 1000, Frees: 990, MagazineHits: 970, LocalHits: 10, CentralHits: 12, Fresh: 5, Large: 3,
		InUseBytes: 512, MappedBytes: 3 << 20, ReleasedBytes: 1536, MagazineBytes: 0, DepotBytes: 5 << 30, LocalBytes: 2048}
	want := "1000 allocs (970 magazine, 10 cache, 12 central, 5 fresh, 3 large), 990 frees; 512 B in use, 3.0 MiB mapped, 1.5 KiB released, 0 B in magazines, 5.0 GiB in depots, 2.0 KiB in caches"
	if got := s.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	if got := fmt.Sprint(s); got != want {
		t.Errorf("fmt.Sprint uses %q, not String", got)
	}
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1<<60 + 1<<59: "1.5 EiB"} {
		if got := sizeString(n); got != want {
			t.Errorf("sizeString(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestBigClassesCached: blocks up to 256 KiB are size-class blocks, cached
// per P as smaller ones are: Alloc+Free pairs of them come back from the
// magazine, not from the page heap.
func TestBigClassesCached(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode has no magazines on the fast path")
	}
	h := newTestHeap(t, unprofiled(Options{}))
	for _, n := range []int{16 << 10, 64 << 10, 256 << 10} {
		h.Free(h.Alloc(n))
		before := h.Stats()
		for range 100 {
			h.Free(h.Alloc(n))
		}
		s := h.Stats()
		// A goroutine that moves to another P between a Free and the next
		// Alloc misses once: most pairs hit.
		if hits := s.MagazineHits - before.MagazineHits; s.Large != before.Large || hits < 90 {
			t.Fatalf("%d-byte pairs: %d of 100 from a magazine, %d large", n, hits, s.Large-before.Large)
		}
	}
}

// TestAllocUnzeroedAgrees holds AllocUnzeroed's copy of the fast path to
// allocFast's (heap.go): on one P, each pops the block the other's Free
// pushed, of every class, counts a magazine hit, leaves the double-free key
// cleared, and declines when the magazine is to sample.
func TestAllocUnzeroedAgrees(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap's fast paths decline every allocation (TestCheckedMagazinesDecline)")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: every pop and push on its magazine
	h := newTestHeap(t, unprofiled(Options{}))
	allocs := []struct {
		name  string
		alloc func(int) []byte
	}{{"Alloc", h.Alloc}, {"AllocUnzeroed", h.AllocUnzeroed}}
	for c := 1; c < numClasses; c++ {
		for _, n := range []int{int(classSize[c-1]) + 1, int(classSize[c])} {
			prev := h.Alloc(n)
			for i := range 4 {
				x := allocs[i%2]
				h.Free(prev)
				hits := h.Stats().MagazineHits
				b := x.alloc(n)
				if addrOf(b) != addrOf(prev) || h.Stats().MagazineHits != hits+1 {
					t.Fatalf("%s(%d) after Free of %#x: %#x, %d magazine hits, want the freed block and 1",
						x.name, n, addrOf(prev), addrOf(b), h.Stats().MagazineHits-hits)
				}
				if n > 8 && (*[2]uint64)(ptr(addrOf(b)))[1] == h.key {
					t.Fatalf("%s(%d): the double-free key is left in the block", x.name, n)
				}
				prev = b
			}
			// A magazine about to sample: both decline to the slow path.
			h.Free(prev)
			for _, x := range allocs {
				for _, m := range h.mags.all {
					m.cls[sizeClass(n)].sampleAt = m.cls[sizeClass(n)].hits
				}
				hits := h.Stats().MagazineHits
				b := x.alloc(n)
				if h.Stats().MagazineHits != hits {
					t.Fatalf("%s(%d) took a block from a magazine about to sample", x.name, n)
				}
				h.Free(b)
			}
			for _, m := range h.mags.all {
				m.cls[sizeClass(n)].sampleAt = math.MaxUint64
			}
		}
	}
}

// TestLimitErrorSays: the limit's refusal names the request, what it
// needed mapped, what is mapped and the Limit, and is still ErrLimit, for
// a large and a small block of a fast and a checked heap, and for an
// Arena's.
func TestLimitErrorSays(t *testing.T) {
	for _, opts := range []Options{{Limit: 1 << 20}, {Limit: 1 << 20, Checked: true}} {
		h := newTestHeap(t, opts)
		_, err := h.TryAlloc(2 << 20)
		want := fmt.Sprintf("offheap: heap limit reached: an allocation of %d bytes needs", 2<<20)
		if !errors.Is(err, ErrLimit) || !strings.HasPrefix(fmt.Sprint(err), want) ||
			!strings.Contains(fmt.Sprint(err), fmt.Sprintf("of the Limit's %d bytes are mapped", 1<<20)) ||
			!strings.HasSuffix(fmt.Sprint(err), "a larger Options.Limit, or allocate with TryAlloc and handle ErrLimit") {
			t.Fatalf("checked=%v: TryAlloc(2 MiB) under a 1 MiB Limit: %v", opts.Checked, err)
		}
		var held [][]byte
		for err = nil; err == nil; {
			var b []byte
			if b, err = h.TryAlloc(64 << 10); err == nil {
				held = append(held, b)
			}
		}
		mapped := h.Stats().MappedBytes
		if msg := fmt.Sprint(err); !strings.Contains(msg, "an allocation of 65536 bytes needs") ||
			!strings.Contains(msg, fmt.Sprintf("and %d of the Limit's", mapped)) {
			t.Fatalf("checked=%v: TryAlloc(64 KiB) with %d bytes mapped: %v", opts.Checked, mapped, err)
		}
		a := h.NewArena()
		if _, err := a.TryAlloc(2 << 20); !errors.Is(err, ErrLimit) || !strings.Contains(fmt.Sprint(err), "an allocation of 2097152 bytes") {
			t.Fatalf("checked=%v: Arena.TryAlloc(2 MiB): %v", opts.Checked, err)
		}
		a.Release()
		for _, b := range held {
			h.Free(b)
		}
	}
}
