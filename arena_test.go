package offheap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
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

func round16(n int) uint64 { return uint64(pageheap.AlignUp(uintptr(n), arenaAlign)) }

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
