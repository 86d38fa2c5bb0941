package offheap

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/pageheap"
)

// placeHeap is a heap with HugePages whose placement by huge pages is on
// (it needs only that the system has 2 MiB huge pages, not that the kernel
// makes any), with a release delay no test waits out.
func placeHeap(t *testing.T) *Heap {
	t.Helper()
	skipRace(t, "regions are Go memory: HugePages does nothing")
	if buildChecked {
		t.Skip("checked mode's canaries and quarantine change the layouts these tests set up")
	}
	h := newTestHeap(t, Options{HugePages: true, ProfileBytes: -1, ReleaseDelay: time.Hour})
	if !h.pages.Huge.On {
		t.Skip("no 2 MiB transparent huge pages on this system")
	}
	return h
}

// run takes a run of np pages from h's page heap, as a large block's.
func run(t *testing.T, h *Heap, np uint32) uintptr {
	t.Helper()
	a, _, err := h.pages.AllocRun(np, 1, pageheap.ClassLarge)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestHugeFillPlacement: with one huge-page range entirely free and one
// half used, a new run of 8 pages (a span's size) goes into the half-used
// one, not into the free one and not at the frontier; and a run of more
// than a huge page starts on a range's first page, where the frontier
// would have put it in the middle of one.
// Positive control: with takeHuge answering false (placement by length
// alone), this test failed:
//
//	hugefill_test.go:67: a new 8-page run at range 0 + 0 pages, in the range that was entirely free; want it in range 1, the half-used one
//
// and with fresh's alignment of a huge page or more dropped:
//
//	hugefill_test.go:79: a 300-page run at 0x7f95e7420000, 128 KiB into its huge page; want it at a huge page's start
func TestHugeFillPlacement(t *testing.T) {
	h := placeHeap(t)
	const half = pageheap.HugeSpan / 2
	e := run(t, h, pageheap.HugeSpan) // range 0, whole
	f := run(t, h, half)              // range 1, first half
	g := run(t, h, half)              // range 1, second half
	sep := run(t, h, pageheap.HugeSpan)
	rng := func(a uintptr) int { return int((a - e) >> 21) }
	if e&(2<<20-1) != 0 || rng(f) != 1 || rng(g) != 1 || rng(sep) != 2 {
		t.Fatalf("setup: runs at ranges %d, %d, %d, %d of an aligned %#x; want 0, 1, 1, 2", 0, rng(f), rng(g), rng(sep), e)
	}
	h.pages.FreeRun(e, pageheap.ClassLarge) // range 0: entirely free
	h.pages.FreeRun(g, pageheap.ClassLarge) // range 1: half used
	s := run(t, h, 8)
	if rng(s) != 1 {
		where := "the range that was entirely free"
		if rng(s) > 2 {
			where = "the frontier"
		}
		t.Fatalf("a new 8-page run at range %d + %d pages, in %s; want it in range 1, the half-used one",
			rng(s), (s-e)>>pageShift%pageheap.HugeSpan, where)
	}
	h.pages.FreeRun(s, pageheap.ClassLarge)
	h.pages.FreeRun(sep, pageheap.ClassLarge)
	h.pages.FreeRun(f, pageheap.ClassLarge)

	// The frontier is now 3 ranges up; a small run there, then a long one.
	run(t, h, 3*pageheap.HugeSpan) // takes ranges 0-2 back: the frontier stays
	y := run(t, h, 16)             // at the frontier: range 3, its first 16 pages
	z := run(t, h, 300)
	if z&(2<<20-1) != 0 {
		t.Fatalf("a 300-page run at %#x, %d KiB into its huge page; want it at a huge page's start", z, z&(2<<20-1)>>10)
	}
	// The 240 pages the alignment skipped take the next small run.
	if w := run(t, h, 8); w != y+16<<pageShift {
		t.Fatalf("a new 8-page run at %#x; want it at %#x, in range 3 after the first one", w, y+16<<pageShift)
	}
}

// TestHugeFillCounts: after a churn of small and large runs, freed and
// allocated again, with Realloc growing and shrinking some in place or
// moving them, the count of allocated pages the page heap keeps for each
// range (hugeFill) is the pagemap's.
func TestHugeFillCounts(t *testing.T) {
	h := placeHeap(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	var live [][]byte
	for i := range 3000 {
		switch op := rnd.IntN(10); {
		case op < 5 || len(live) == 0:
			n := []int{1 << 10, 20 << 10, 100 << 10, 1 << 20, 3 << 20}[rnd.IntN(5)]
			live = append(live, h.Alloc(n))
		case op < 8:
			j := rnd.IntN(len(live))
			h.Free(live[j])
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
		default:
			j := rnd.IntN(len(live))
			live[j] = h.Realloc(live[j], rnd.IntN(4<<20)+1)
		}
		if i%500 == 0 {
			checkHugeFill(t, h)
		}
	}
	checkHugeFill(t, h)
	for _, b := range live {
		h.Free(b)
	}
	h.Trim()
	checkHugeFill(t, h)
}

// checkHugeFill fails t unless h's hugeFill agrees with its pagemap.
func checkHugeFill(t *testing.T, h *Heap) {
	t.Helper()
	ph := &h.pages
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	want := map[uint32]uint32{}
	rs := ph.Regions.Load().ByPage
	for i, r := range rs {
		end := r.First + r.Pages
		if i == len(rs)-1 {
			end = r.First + ph.Frontier
		}
		for p := r.First; p < end; p++ {
			if k, ok := pageheap.HugeRange(r, p); ok && uint8(*ph.Entry(p)) != 0 {
				want[k]++
			}
		}
	}
	f := &ph.Huge.Fill
	for k, s := range f.At {
		if s.Used != want[k] {
			t.Errorf("range %d: %d pages allocated by its count, %d by the pagemap", k, s.Used, want[k])
		}
		if s.Used < pageheap.HugeSpan && f.ByUsed[s.Used][s.Idx] != k {
			t.Errorf("range %d: not at its place %d in the list of %d", k, s.Idx, s.Used)
		}
	}
	for k, n := range want {
		if _, ok := f.At[k]; !ok {
			t.Errorf("range %d: %d pages allocated by the pagemap, no count", k, n)
		}
	}
}
