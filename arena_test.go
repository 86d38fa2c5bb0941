package offheap

import (
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
)

// arenaRec is one allocation a test made: where, how long, and the seed of the
// pattern it was filled with.
type arenaRec struct {
	addr uintptr
	n    int
	seed uint32
}

// patternByte is byte i of the pattern for seed: different seeds differ in
// their first byte, so two overlapping allocations cannot both check out.
func patternByte(seed uint32, i int) byte {
	return byte(seed) ^ byte(seed>>8) ^ byte(i*7+i>>8)
}

// fillPattern checks that b is zero, then fills it with seed's pattern.
func fillPattern(b []byte, seed uint32) error {
	for i, v := range b {
		if v != 0 {
			return fmt.Errorf("fresh allocation of %d bytes at %#x: byte %d is %#x, want 0", len(b), addrOf(b), i, v)
		}
	}
	for i := range b {
		b[i] = patternByte(seed, i)
	}
	return nil
}

// checkRecs is the reference checker: every allocation 16-byte aligned, no
// two overlapping, every pattern intact. It returns the first problem.
func checkRecs(recs []arenaRec) error {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(x, y arenaRec) int {
		if x.addr < y.addr {
			return -1
		}
		if x.addr > y.addr {
			return 1
		}
		return 0
	})
	for i, r := range recs {
		if r.addr%arenaAlign != 0 {
			return fmt.Errorf("allocation of %d bytes at %#x is not 16-byte aligned", r.n, r.addr)
		}
		if i > 0 {
			if p := recs[i-1]; p.addr+uintptr(p.n) > r.addr {
				return fmt.Errorf("allocations overlap: %d bytes at %#x and %d bytes at %#x", p.n, p.addr, r.n, r.addr)
			}
		}
		for j, v := range bytesAt(r.addr, r.n) {
			if want := patternByte(r.seed, j); v != want {
				return fmt.Errorf("allocation of %d bytes at %#x: byte %d is %#x, want %#x (pattern overwritten)", r.n, r.addr, j, v, want)
			}
		}
	}
	return nil
}

func round16(n int) uint64 { return uint64(alignUp(uintptr(n), arenaAlign)) }

// recorder collects allocations from many goroutines.
type recorder struct {
	mu   sync.Mutex
	recs []arenaRec
	seed atomic.Uint32
	errs []error
}

func (r *recorder) add(t testing.TB, b []byte) {
	seed := r.seed.Add(1)
	if err := fillPattern(b, seed); err != nil {
		r.fail(err)
	}
	r.mu.Lock()
	r.recs = append(r.recs, arenaRec{addrOf(b), len(b), seed})
	r.mu.Unlock()
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *recorder) check(t testing.TB) {
	t.Helper()
	if err := errors.Join(r.errs...); err != nil {
		t.Fatal(err)
	}
	if err := checkRecs(r.recs); err != nil {
		t.Fatal(err)
	}
}

func (r *recorder) bytes() uint64 {
	var s uint64
	for _, x := range r.recs {
		s += round16(x.n)
	}
	return s
}

// arenaSizes is a spread of request sizes: the fast path, the shared path,
// chunks of their own.
var arenaSizes = []int{1, 7, 8, 15, 16, 17, 31, 48, 64, 100, 255, 256, 257, 511, 512, 513, 1000, 4095, 4096, 5000, 16384, 20000, 70000, 1 << 20}

func TestArenaAllocSizes(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	var r recorder
	for range 3 {
		for _, n := range arenaSizes {
			r.add(t, a.Alloc(n))
			b, err := a.TryAlloc(n)
			if err != nil {
				t.Fatal(err)
			}
			r.add(t, b)
		}
	}
	r.check(t)
	if got, want := a.Stats().AllocBytes, r.bytes(); got != want {
		t.Errorf("Stats().AllocBytes = %d, want %d", got, want)
	}
	if b := a.Alloc(0); b == nil || len(b) != 0 {
		t.Errorf("Alloc(0) = %v (nil %v), want empty non-nil", b, b == nil)
	}
	if b := a.Alloc(20); cap(b) != 20 {
		t.Errorf("cap(Alloc(20)) = %d, want 20", cap(b))
	}
}

// TestArenaConcurrent is the -race stress: several goroutines allocate
// random sizes at once over several Reset rounds; every allocation is zero
// when handed out and keeps its pattern to the end of its round.
func TestArenaConcurrent(t *testing.T) {
	h := newTestHeap(t, Options{})
	for _, mk := range []struct {
		name string
		new  func() *Arena
	}{
		{"default", h.NewArena},
		{"small-chunks", func() *Arena { return h.NewArenaSize(1) }},
	} {
		t.Run(mk.name, func(t *testing.T) {
			a := mk.new()
			defer a.Release()
			workers := max(4, 2*runtime.GOMAXPROCS(0))
			per := 3000
			if testing.Short() {
				per = 500
			}
			for round := range 3 {
				var r recorder
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
						for range per {
							var n int
							switch k := rng.IntN(100); {
							case k < 80:
								n = 1 + rng.IntN(256)
							case k < 97:
								n = 257 + rng.IntN(4000)
							default:
								n = 4096 + rng.IntN(40000)
							}
							r.add(t, a.Alloc(n))
						}
					})
				}
				wg.Wait()
				r.check(t)
				if got, want := a.Stats().AllocBytes, r.bytes(); got != want {
					t.Errorf("round %d: Stats().AllocBytes = %d, want %d", round, got, want)
				}
				a.Reset()
			}
		})
	}
}

// TestArenaResetReuses: the same work after Reset takes no new chunk. It
// runs on one P: each P fills sub-chunks and lanes of its own, so a
// goroutine that moved to another P between (or during) the two rounds
// would lay the second round out differently, and may need a chunk more.
func TestArenaResetReuses(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode gives every chunk back at Reset, so nothing is reused")
	}
	onOneP(t)
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	fill := func() *recorder {
		var r recorder
		for i := range 5000 {
			r.add(t, a.Alloc(1+i%300))
		}
		r.add(t, a.Alloc(100000))
		return &r
	}
	fill().check(t)
	before, heapBefore := a.Stats(), h.Stats().InUseBytes
	a.Reset()
	if s := a.Stats(); s.AllocBytes != 0 || s.WasteBytes != 0 || s.HeldBytes != before.HeldBytes || s.Chunks != before.Chunks {
		t.Fatalf("after Reset: %+v, want no bytes handed out and the chunks of %+v", s, before)
	}
	r := fill() // fillPattern checks every allocation is zero again
	r.check(t)
	if s := a.Stats(); s.HeldBytes != before.HeldBytes || s.Chunks != before.Chunks {
		t.Errorf("the same work after Reset took new chunks: %+v, before %+v", s, before)
	}
	if got := h.Stats().InUseBytes; got != heapBefore {
		t.Errorf("heap InUseBytes %d after the reused round, want %d", got, heapBefore)
	}
}

func TestArenaReleaseReturnsEverything(t *testing.T) {
	h := newTestHeap(t, Options{})
	before := h.Stats().InUseBytes
	a := h.NewArena()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 2000 {
				a.Alloc(1 + i%700)
			}
			a.Alloc(50000)
		})
	}
	wg.Wait()
	if h.Stats().InUseBytes == before {
		t.Fatal("the arena took nothing from the heap")
	}
	peak := a.Stats().AllocBytes
	a.Release()
	if got := h.Stats().InUseBytes; got != before {
		t.Errorf("heap InUseBytes after Release = %d, want %d (as before NewArena)", got, before)
	}
	if s := a.Stats(); s != (ArenaStats{PeakAllocBytes: peak}) {
		t.Errorf("Stats after Release = %+v, want zero but for PeakAllocBytes %d", s, peak)
	}
	a.Release() // a second Release does nothing
}

// TestArenaLargeRequestOwnChunk runs on one P: it checks that two small
// allocations are adjacent, which holds within one P's sub-chunk.
func TestArenaLargeRequestOwnChunk(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode gives every chunk back at Reset, so nothing is reused")
	}
	onOneP(t)
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	small := a.Alloc(64)
	s0 := a.Stats()
	big := a.Alloc(3 * arenaChunkDefault)
	s1 := a.Stats()
	if s1.Chunks != s0.Chunks+1 || s1.HeldBytes < s0.HeldBytes+3*arenaChunkDefault {
		t.Errorf("a request bigger than a chunk: stats %+v -> %+v, want one more chunk of at least its size", s0, s1)
	}
	if got := addrOf(big); got%pageSize != 0 {
		t.Errorf("own chunk at %#x, want page-aligned (a heap block of its own)", got)
	}
	// The small allocations go on in the shared chunk.
	if next := a.Alloc(64); addrOf(next) != addrOf(small)+64 {
		t.Errorf("next small allocation at %#x, want %#x", addrOf(next), addrOf(small)+64)
	}
	a.Reset()
	a.Alloc(64)
	held := a.Stats().HeldBytes
	if b := a.Alloc(3 * arenaChunkDefault); addrOf(b) != addrOf(big) {
		t.Errorf("after Reset the large request got %#x, want its old chunk %#x", addrOf(b), addrOf(big))
	}
	if got := a.Stats().HeldBytes; got != held {
		t.Errorf("HeldBytes %d after reusing a spare, want %d", got, held)
	}
}

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

func TestArenaTyped(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	type point struct{ X, Y float64 }
	var _ Allocator = a
	p := New[point](a)
	if *p != (point{}) {
		t.Fatalf("New: %+v, want zero", *p)
	}
	p.X, p.Y = 1, 2
	s := MakeSlice[int64](a, 1000)
	if len(s) != 1000 || cap(s) != 1000 {
		t.Fatalf("MakeSlice: len %d cap %d", len(s), cap(s))
	}
	for i := range s {
		if s[i] != 0 {
			t.Fatalf("MakeSlice: s[%d] = %d, want 0", i, s[i])
		}
		s[i] = int64(i)
	}
	if *p != (point{1, 2}) || s[999] != 999 {
		t.Fatal("typed allocations overwrote each other")
	}
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

// TestArenaZeroesEveryRound: memory handed out after Reset, which the round
// before dirtied, comes zeroed.
func TestArenaZeroesEveryRound(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := newArena(h, arenaChunkMin, false)
	for round := range 3 {
		var r recorder
		for i := range 3000 {
			r.add(t, a.Alloc(1+(i*round)%600)) // checks zero, then dirties
		}
		r.add(t, a.Alloc(9000))
		r.check(t)
		a.Reset()
	}
	a.Release()
}

// TestArenaAllocUnzeroed: AllocUnzeroed and Alloc mixed over several
// rounds hand out distinct, aligned memory that the census counts; Alloc's
// is zero even where the round before wrote through AllocUnzeroed, and an
// AllocUnzeroed above 512 bytes is not cleared: a chunk of its own, reused
// after Reset, still holds the last round's bytes.
func TestArenaAllocUnzeroed(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := newArena(h, arenaChunkMin, false)
	defer a.Release()
	for round := range 3 {
		var r recorder
		for i := range 3000 {
			n := 1 + (i*(round+1)*37)%3000
			if i%2 == 0 {
				r.add(t, a.Alloc(n)) // checks zero, then dirties
				continue
			}
			b := a.AllocUnzeroed(n)
			if len(b) != n || cap(b) != n {
				t.Fatalf("AllocUnzeroed(%d): len %d, cap %d", n, len(b), cap(b))
			}
			clear(b) // what the caller writes
			r.add(t, b)
		}
		// A chunk of its own (bigMin is a quarter of 64 KiB), which a fast
		// heap's Reset keeps for the next round and a checked one's gives
		// back.
		big := a.AllocUnzeroed(20000)
		if round > 0 && !h.opts.Checked && big[100] == 0 {
			t.Errorf("round %d: AllocUnzeroed(20000) reused a chunk of its own and cleared it", round)
		}
		for i := range big {
			big[i] = 0xA5
		}
		r.check(t)
		if got, want := a.Stats().AllocBytes, r.bytes()+uint64(alignUp(20000, arenaAlign)); got != want {
			t.Errorf("round %d: Stats().AllocBytes = %d, want %d", round, got, want)
		}
		a.Reset()
	}
}

// TestArenaChecked: on a checked heap Reset gives the chunks back, so the
// heap's poisoning catches a write through a slice kept past Reset; the
// control (no such write) closes clean.
func TestArenaChecked(t *testing.T) {
	for _, bug := range []bool{false, true} {
		h, err := NewHeap(Options{Checked: true})
		if err != nil {
			t.Skipf("checked mode not available: %v", err)
		}
		before := h.Stats().InUseBytes
		a := h.NewArena()
		var r recorder
		for i := range 1000 {
			r.add(t, a.Alloc(1+i%300))
		}
		r.check(t)
		stale := a.Alloc(64)
		a.Reset()
		if s := a.Stats(); s.Chunks != 0 || s.HeldBytes != 0 {
			t.Errorf("checked heap: after Reset the arena holds %+v, want no chunks", s)
		}
		if bug {
			stale[10] = 1 // a use after Reset
		}
		r = recorder{}
		for i := range 1000 {
			r.add(t, a.Alloc(1+i%300))
		}
		r.check(t)
		a.Release()
		if got := h.Stats().InUseBytes; got != before {
			t.Errorf("heap InUseBytes after Release = %d, want %d", got, before)
		}
		err = h.Close()
		var me *MemoryError
		switch {
		case bug && (!errors.As(err, &me) || me.Kind != WriteAfterFree):
			t.Errorf("write after Reset: Close returned %v, want a WriteAfterFree", err)
		case !bug && err != nil:
			t.Errorf("control: Close returned %v, want nil", err)
		}
	}
}

// Positive controls: the checker goes red when the arena (or the test)
// corrupts.

func TestArenaCheckerCatchesDuplicateChunk(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := newArena(h, arenaChunkMin, false)
	var r recorder
	for i := range 3000 {
		if i == 1500 {
			// The planted bug: every chunk's offset back to 0 and the
			// sub-chunks dropped, so the claims that follow hand out
			// bytes handed out before.
			a.dropSubChunks()
			for _, c := range a.chunks {
				c.off.Store(0)
				c.waste.Store(0)
			}
			for l := range a.lanes {
				if len(a.chunks) > 0 {
					a.lanes[l].cur.Store(a.chunks[0])
				}
			}
		}
		b := a.Alloc(1 + i%100)
		seed := r.seed.Add(1)
		for j := range b { // fill without the zero check, which would fire first
			b[j] = patternByte(seed, j)
		}
		r.recs = append(r.recs, arenaRec{addrOf(b), len(b), seed})
	}
	// Either finding proves the checker sees the duplicate: two records on
	// the same bytes overlap, and the later fill overwrote the earlier one.
	err := checkRecs(r.recs)
	if err == nil || !strings.Contains(err.Error(), "overlap") && !strings.Contains(err.Error(), "overwritten") {
		t.Fatalf("checker on an arena that hands out the same bytes twice: %v, want an overlap", err)
	}
	t.Logf("checker reported: %v", err)
	a.Release()
}

func TestArenaCheckerCatchesCorruption(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	var r recorder
	for i := range 100 {
		r.add(t, a.Alloc(1+i))
	}
	r.check(t)

	// A pattern written wrong.
	b := bytesAt(r.recs[50].addr, r.recs[50].n)
	b[len(b)-1] ^= 0x40
	if err := checkRecs(r.recs); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("checker after corrupting a byte: %v, want a pattern error", err)
	}
	b[len(b)-1] ^= 0x40

	// The same offset recorded twice.
	recs := append(slices.Clone(r.recs), arenaRec{r.recs[10].addr, r.recs[10].n, r.recs[10].seed + 1})
	if err := checkRecs(recs); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("checker with an offset handed out twice: %v, want an overlap", err)
	}

	// A misaligned allocation.
	recs = append(slices.Clone(r.recs), arenaRec{r.recs[10].addr + 8, 0, 0})
	if err := checkRecs(recs); err == nil || !strings.Contains(err.Error(), "aligned") {
		t.Errorf("checker with a misaligned allocation: %v, want an alignment error", err)
	}

	// Memory handed out dirty.
	d := make([]byte, 16)
	d[3] = 1
	if err := fillPattern(d, 1); err == nil {
		t.Error("fillPattern accepted dirty memory")
	}
	if err := checkRecs(r.recs); err != nil {
		t.Fatalf("checker after undoing the corruption: %v", err)
	}
}

// TestArenaLanes checks that after Reset each lane takes back the chunks it
// used, so a P refills from memory its own cache last held, and takes
// another lane's spares before a new chunk.
func TestArenaLanes(t *testing.T) {
	h := newTestHeap(t, Options{})
	if h.chk != nil {
		t.Skip("a checked heap's Reset gives its chunks back: no spares to take")
	}
	a := h.NewArena()
	defer a.Release()
	if len(a.lanes) < 2 {
		a.lanes, a.spareGen = make([]arenaLane, 2), make([][]*arenaChunk, 2)
	}
	first := func(lane int) uintptr {
		_, _, c, err := a.claim(lane, arenaSub, arenaSub)
		if err != nil {
			t.Fatal(err)
		}
		return c.base
	}
	b0, b1 := first(0), first(1)
	if b0 == b1 {
		t.Fatal("two lanes share a chunk")
	}
	held := a.Stats().HeldBytes
	a.Reset()
	// Lane 1 claims first: it must get its own chunk back, not lane 0's.
	if got := first(1); got != b1 {
		t.Errorf("after Reset lane 1 got chunk %#x, want its own %#x (lane 0's is %#x)", got, b1, b0)
	}
	if got := first(0); got != b0 {
		t.Errorf("after Reset lane 0 got chunk %#x, want its own %#x", got, b0)
	}
	a.Reset()
	// One lane alone uses both lanes' spares before taking a new chunk.
	first(0)
	a.lanes[0].cur.Load().off.Store(a.lanes[0].cur.Load().size) // exhausted
	if got := first(0); got != b1 {
		t.Errorf("lane 0 took chunk %#x, want lane 1's spare %#x", got, b1)
	}
	if a.Stats().HeldBytes != held {
		t.Errorf("held %d bytes, want %d: a new chunk while spares were left", a.Stats().HeldBytes, held)
	}
}

// TestArenaPeakAllocBytes checks the high-water mark over rounds of
// different sizes filled by several goroutines: it is the largest round's
// bytes, during the round and after Resets and Release.
func TestArenaPeakAllocBytes(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	round := func(per int) uint64 {
		var r recorder
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range per {
					r.add(t, a.Alloc(1+(i*37+w)%3000))
				}
			})
		}
		wg.Wait()
		r.check(t)
		return r.bytes()
	}
	check := func(when string, want uint64) {
		t.Helper()
		if got := a.Stats().PeakAllocBytes; got != want {
			t.Errorf("%s: PeakAllocBytes = %d, want %d", when, got, want)
		}
	}
	check("new arena", 0)
	mid := round(200)
	check("during the first round", mid)
	a.Reset()
	check("after its Reset", mid)
	small := round(50)
	if small >= mid {
		t.Fatalf("the small round took %d bytes, not fewer than %d", small, mid)
	}
	check("during a smaller round", mid)
	a.Reset()
	big := round(400)
	check("during a bigger round", big)
	a.Reset()
	check("after its Reset", big)
	a.Release()
	check("after Release", big)
}

// TestArenaAllocAgrees holds Alloc's copy of the fast path to allocFast's
// (TryAlloc's): on one P, alternating the two bumps one sub-chunk, each
// allocation starting where the last one ended, rounded up to 16, except
// where a refill starts a new sub-chunk.
func TestArenaAllocAgrees(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	var end uintptr // where the last allocation ended
	total, breaks := 0, 0
	for i := range 20_000 {
		n := 1 + i*7%arenaFastMax
		var b []byte
		if i%2 == 0 {
			b = a.Alloc(n)
		} else {
			var err error
			if b, err = a.TryAlloc(n); err != nil {
				t.Fatal(err)
			}
		}
		if addrOf(b) != end {
			breaks++
		}
		end = addrOf(b) + alignUp(uintptr(n), arenaAlign)
		total += n
	}
	// A refill drops at most arenaFastMax bytes of the sub-chunk it leaves.
	if most := total/(arenaSub-arenaFastMax) + 2; breaks > most {
		t.Fatalf("%d allocations started away from the last one's end, want at most %d (the refills)", breaks, most)
	}
}
