package shapes

import (
	"fmt"
	"slices"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// pairsMode is one row group of the pairs shape.
type pairsMode struct {
	size     int  // 0 = the 16 B - 4 KiB mix
	unzeroed bool // AllocUnzeroed (or the arm's equivalent) instead of Alloc
}

// The pairs sub names, used by the verdicts.
const (
	pairs64          = "size=64"
	pairs64Unzeroed  = "size=64-unzeroed"
	pairsMix         = "size=16-4096"
	pairs16KUnzeroed = "size=16384-unzeroed"
	pairs64KUnzeroed = "size=65536-unzeroed"
)

// pairsLarge are the block sizes of the large pairs: 16 KiB, where most
// allocators still cache blocks per thread, 64 KiB (fastcache's chunks, many
// value buffers) and 256 KiB, the top of offheap's size classes (and of
// tcmalloc's).
var pairsLarge = []int{16 << 10, 64 << 10, 256 << 10}

// pairsSubs lists the pairs shape's row groups: 64 B zeroed and unzeroed,
// the mix, then each large size zeroed and unzeroed, at one worker: make
// takes microseconds a pair there, and would take most of the shape's time
// at every worker count.
func pairsSubs() []bench.Sub {
	subs := []bench.Sub{
		{Name: pairs64, Param: pairsMode{size: 64}},
		{Name: pairs64Unzeroed, Param: pairsMode{size: 64, unzeroed: true}},
		{Name: pairsMix, Param: pairsMode{}},
	}
	for _, n := range pairsLarge {
		subs = append(subs,
			bench.Sub{Name: fmt.Sprintf("size=%d", n), Param: pairsMode{size: n}, FirstWorkers: true},
			bench.Sub{Name: fmt.Sprintf("size=%d-unzeroed", n), Param: pairsMode{size: n, unzeroed: true}, FirstWorkers: true})
	}
	return subs
}

func init() {
	bench.RegisterArmShape(bench.ArmShape{Spec: bench.Spec{
		Name:     "pairs",
		Doc:      "Alloc then Free, over and over: 64 B zeroed and unzeroed, a 16 B-4 KiB mix, and 16, 64 and 256 KiB zeroed and unzeroed",
		Work:     bench.FixedTotal,
		Quick:    true,
		Order:    10,
		Unit:     "pair",
		Subs:     pairsSubs(),
		Verdicts: pairsVerdicts,
		// The pairs-t2/t1 verdict's figure, plotted.
		Scaling:    0.6,
		ScalingSub: pairs64,
	}, Run: runPairs,
	})
}

// mixSizes is the 16 B-4 KiB mix: log-uniform, so each power of two is as
// common as the next, as in most programs' size histograms. Read-only and
// shared by every worker.
var mixSizes = func() []int {
	r := bench.NewRand(42)
	s := make([]int, 1024)
	for i := range s {
		lo := 16 << r.Intn(8) // 16 .. 2048
		s[i] = lo + r.Intn(lo+1)
	}
	return s
}()

func runPairs(t *bench.Trial, arm bench.Allocator) (bench.Sample, error) {
	mode := t.Sub.Param.(pairsMode)
	var total int
	switch {
	case mode.size == 0:
		total = t.Size(600_000, 6_000_000)
	case mode.size < pairsLarge[0]:
		total = t.Size(2_000_000, 20_000_000)
	case mode.unzeroed:
		// A block a cache keeps costs what a 64 B one does, a few ms a
		// trial; make, which zeroes and collects, takes microseconds a
		// pair, and calibration cuts its trials.
		total = t.Size(100_000, 2_000_000)
	default:
		// Zeroing is most of a zeroed pair: the same bytes cleared per
		// trial (256 MiB, in the cache) at every size.
		total = t.Size(256<<20/mode.size, 4*(1<<30/mode.size))
	}
	el := bench.Parallel(t.Workers, func(w int) {
		a := bench.ForWorker(arm, w)
		n := bench.Split(total, t.Workers, w)
		switch {
		case mode.size == 0:
			sizes := mixSizes
			j := w * 97
			for range n {
				b := a.Alloc(sizes[j&1023])
				b[0] = 1
				a.Free(b)
				j++
			}
		case mode.unzeroed:
			size := mode.size
			for i := range n {
				b := bench.AllocUnzeroed(a, size)
				b[0] = byte(i)
				a.Free(b)
			}
		default:
			size := mode.size
			for i := range n {
				b := a.Alloc(size)
				b[0] = byte(i)
				a.Free(b)
			}
		}
	})
	return bench.Sample{Ops: int64(total), Allocs: int64(total), Elapsed: el}, nil
}

// pairsVerdicts judges the headline figures of pairs: offheap against the
// pools people use at one goroutine, and how offheap scales.
func pairsVerdicts(r *bench.Report) []bench.Verdict {
	var vs []bench.Verdict
	vs = append(vs,
		oneWorker(r, "pairs-unzeroed", "64 B pairs, 1 goroutine: offheap AllocUnzeroed+Free / sync-pool Get+Put",
			"pairs", pairs64Unzeroed, "offheap", "sync-pool", 0.7),
		needsIdleCore(oneWorker(r, "pairs-zeroed", "64 B pairs, 1 goroutine: offheap Alloc+Free / make",
			"pairs", pairs64, "offheap", "go-make", 0.45), r, makeIdleCore))
	// A Local takes the pins out of the pair: about half of the heap's.
	vs = append(vs,
		oneWorker(r, "pairs-local/pool", "64 B pairs, 1 goroutine: offheap-local AllocUnzeroed+Free / sync-pool Get+Put",
			"pairs", pairs64Unzeroed, "offheap-local", "sync-pool", 0.35),
		oneWorker(r, "pairs-local/heap", "64 B pairs, 1 goroutine: offheap-local AllocUnzeroed+Free / offheap's",
			"pairs", pairs64Unzeroed, "offheap-local", "offheap", 0.5))
	// A Local needs no pin: below the least two pinned sections cost (the
	// pin-floor arm). The Heap's pair against that floor is not judged
	// here: the harness's own cost (the null arm, a third of the floor)
	// weighs on both sides of that ratio; BenchmarkPair64's lean-floor arm
	// measures it without.
	vs = append(vs,
		oneWorker(r, "pairs-local/pin-floor", "64 B pairs, 1 goroutine: offheap-local AllocUnzeroed+Free / pin-floor's",
			"pairs", pairs64Unzeroed, "offheap-local", "pin-floor", 1.0))
	// A block a per-P cache serves costs about the same whatever its size;
	// one that goes to a page heap under a lock costs many times more.
	vs = append(vs, cellRatio(r, "pairs-64k/16k", "AllocUnzeroed+Free pairs, 1 goroutine, offheap: 64 KiB / 16 KiB",
		"pairs", cell{pairs64KUnzeroed, "offheap"}, cell{pairs16KUnzeroed, "offheap"}, 3))
	vs = append(vs, checkCostVerdicts(r, "pairs", []string{pairs64})...)

	// Scaling: fixed total work, so perfect scaling on 2 cores halves the
	// time. The target counts are 2 and 8; a run without 8 workers uses its
	// largest count above 2.
	var ws []int
	for _, sh := range r.Shapes {
		if sh.Name == "pairs" {
			ws = sh.Workers
		}
	}
	scale := func(w int, limit float64) {
		name := fmt.Sprintf("pairs-t%d/t1", w)
		figure := fmt.Sprintf("64 B pairs, fixed total: time at %d workers / time at 1, offheap", w)
		target := fmt.Sprintf("<= %.2f", limit)
		one, why := find(r, "pairs", pairs64, "offheap", 1)
		at, why2 := find(r, "pairs", pairs64, "offheap", w)
		if one == nil || at == nil {
			vs = append(vs, bench.Skip(name, figure, target, missing(why, why2)))
			return
		}
		v := at.MinNs / one.MinNs
		m := fmt.Sprintf("%.2f", v)
		if n1, n2 := r.Find("pairs", pairs64, "offheap-nomag", 1), r.Find("pairs", pairs64, "offheap-nomag", w); n1 != nil && n2 != nil {
			m += fmt.Sprintf(" (offheap-nomag %.2f)", n2.MinNs/n1.MinNs)
		}
		vs = append(vs, scalingAtMost(bench.Verdict{Name: name, Figure: figure, Target: target, Value: v, Measured: m},
			limit, r, "pairs", pairs64, "null", w, one, at))
	}
	scale(2, 0.6)
	if slices.Contains(ws, 8) {
		scale(8, 0.65)
	} else if len(ws) > 0 && ws[len(ws)-1] > 2 {
		scale(ws[len(ws)-1], 0.65)
	}
	return vs
}
