package shapes

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterWayShape(memoryShape(bench.Spec{
		Name: "frag",
		Doc: "a cache's life: fill 200k values of 16-512 B (-long 2M), evict 90% at random, one Relocate pass over the survivors " +
			"(arms with Relocate; offheap-defrag runs its rule instead), refill the freed volume with 1-4 KiB values; resident/live after each phase (Trim, or " +
			"FreeOSMemory, first), and what the pass costs",
		Work:    bench.FixedTotal,
		Quick:   true,
		Order:   62,
		Unit:    "op",
		Workers: []int{1},
		// The live set is the point: calibration would shrink it until
		// each class's one partial span weighed on the figures.
		FixedSize: true,
		Metrics: append([]bench.Metric{
			{Name: fragFilled, Doc: "resident / live bytes once filled"},
			{Name: fragEvicted, Doc: "resident / live bytes after the eviction", Label: "resident / live after evicting 90%", Target: 1.3},
			{Name: fragRelocated, Doc: "resident / live bytes after the eviction, the survivors moved by hand, and one Relocate pass (arms with Relocate)", Label: "resident / live after the Relocate pass", Target: 1.3},
			{Name: fragRefilled, Doc: "resident / live bytes after the refill (after the Relocate pass, where the arm has one)", Label: "resident / live after the refill", Target: 1.3},
			{Name: fragMoved, Doc: "% of the survivors the Relocate pass moved"},
			{Name: fragPassNs, Doc: "the Relocate pass's time per block moved, in ns: RelocateAll over batches of 1000 survivors, gathered and scattered back"},
			{Name: fragCopyNs, Doc: "Alloc + copy + Free of the same survivors after the eviction, before the pass, per block, in ns: what moving them by hand costs (arms with Relocate)"},
			{Name: fragReadNs, Doc: "the survivors, as the pass finds them, copied into warm memory and nothing else, per block, in ns: the least work a move does, the floor of offheap-defrag's rule (arms with Relocate)"},
			{Name: fragDenseNs, Doc: "the fastest of twenty more RelocateAll passes, after the refill and a second, per block, in ns: the cost over spans with nothing to gain"},
			{Name: fragNullNs, Doc: "the fastest of twenty passes of the same loop over the same values, interleaved with those, calling a method that moves nothing in place of RelocateAll, per block, in ns: the harness's share of dense-ns"},
		}, defragMetrics...),
		Plot:     []string{fragEvicted, fragRelocated, fragRefilled, defragCPU},
		Verdicts: fragVerdicts,
	}, runFrag))
}

// The frag shape's metrics.
const (
	fragFilled    = "filled"
	fragEvicted   = "evicted"
	fragRelocated = "relocated"
	fragRefilled  = "refilled"
	fragMoved     = "moved-pct"
	fragPassNs    = "pass-ns"
	fragCopyNs    = "copy-ns"
	fragReadNs    = "read-ns"
	fragDenseNs   = "dense-ns"
	fragNullNs    = "null-ns"
)

// fragDensePasses is how many Relocate passes over a converged heap the
// dense-ns figure is the fastest of.
const fragDensePasses = 20

// relocater is an arm that can move a block to a denser span, a batch at
// a time: offheap's heap, and its Local arm.
type relocater interface {
	RelocateAll(bs [][]byte) int
}

// fragBatch is how many values a pass hands RelocateAll at once: what a
// cache's pass would visit under one hold of its own lock
// (docs/storing-values.md).
const fragBatch = 1000

// runFrag: what an eviction at random does to a heap of small values, and
// what one Relocate pass gives back. The timed ops are the fill's, the
// eviction's and the refill's Allocs and Frees.
func runFrag(t *bench.Trial, row bench.Allocator) (bench.Sample, error) {
	arm := bench.ForWorker(row, 0) // one worker: a Local arm's own Local
	n := t.Size(200_000, 2_000_000)
	vals := make([][]byte, n)
	refill := make([][]byte, 0, n/8)
	batch := make([][]byte, fragBatch)
	bench.Touch(vals)
	bench.Touch(refill)
	var survivors []int
	m := map[string]float64{}
	probe := bench.NewMemoryProbe(row, true)
	r := bench.NewRand(17)
	var live, ops, allocs int64
	var el time.Duration
	d, _ := row.(*defragHeap) // nil but for the offheap-defrag way
	tick := func([][]byte) {}
	if d != nil {
		tick = func(refill [][]byte) { d.tick(live, vals, refill) }
	}

	t0 := time.Now()
	d.start()
	for i := range vals {
		b := arm.Alloc(16 + r.Intn(497))
		b[0] = byte(i)
		vals[i] = b
		live += int64(len(b))
		tick(nil)
	}
	d.stop()
	el += time.Since(t0)
	ops += int64(n)
	allocs += int64(n)
	probe.Record(m, fragFilled, live)
	filled := live

	t0 = time.Now()
	d.start()
	for i, b := range vals {
		if r.Intn(10) != 0 {
			arm.Free(b)
			vals[i] = nil
			live -= int64(len(b))
			ops++
			tick(nil)
		} else {
			survivors = append(survivors, i)
		}
	}
	d.stop()
	el += time.Since(t0)
	probe.Record(m, fragEvicted, live)
	// One pass, as a cache would run it: every survivor offered once.
	rl, canMove := row.(relocater)
	if canMove {
		// First the survivors moved by hand, over the same scattered
		// blocks: what the pass is judged against. Through magazines this
		// leaves the heap as sparse as it found it (the new blocks come
		// from the same spans' free blocks); with magazines off it fills
		// one span at a time, and leaves the pass little to do. (For make
		// it would be a compaction, the collector freeing the old spans:
		// the other arms go without it.)
		t0 = time.Now()
		for _, i := range survivors {
			b := vals[i]
			nb := arm.Alloc(len(b))
			copy(nb, b)
			arm.Free(b)
			vals[i] = nb
		}
		m[fragCopyNs] = float64(time.Since(t0).Nanoseconds()) / float64(max(len(survivors), 1))
		allocs += int64(len(survivors))
		m[fragReadNs] = readSurvivors(vals, survivors)
		moved, pass := relocatePass(rl, vals, survivors, batch)
		allocs += int64(moved)
		probe.Record(m, fragRelocated, live)
		m[fragMoved] = 100 * float64(moved) / float64(max(len(survivors), 1))
		if moved > 0 {
			m[fragPassNs] = float64(pass.Nanoseconds()) / float64(moved)
		}
	}

	t0 = time.Now()
	d.start()
	for volume := filled - live; volume > 0; {
		b := arm.Alloc(1024 + r.Intn(3073))
		b[0] = 1
		refill = append(refill, b)
		volume -= int64(len(b))
		live += int64(len(b))
		ops++
		allocs++
		tick(refill)
	}
	d.stop()
	el += time.Since(t0)
	probe.Record(m, fragRefilled, live)

	if canMove {
		// A second pass takes what the first left in spans that were
		// fuller then; the ones after it find spans with nothing to gain.
		// Such a pass takes a few hundred microseconds, so one preemption
		// would double it: the figure is the fastest of fragDensePasses,
		// after a collection, so that no cycle the harness's own
		// allocations started shares the passes' cores.
		runtime.GC()
		dense, null := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
		for pass := range 1 + fragDensePasses {
			moved, took := relocatePass(rl, vals, survivors, batch)
			if pass > 0 {
				dense = min(dense, took)
			}
			allocs += int64(moved)
			_, took = relocatePass(nullRelocater{}, vals, survivors, batch)
			null = min(null, took)
		}
		per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(max(len(survivors), 1)) }
		m[fragDenseNs], m[fragNullNs] = per(dense), per(null)
	}
	if d != nil {
		d.record(m)
		allocs += int64(d.moved)
	}
	for _, i := range survivors {
		arm.Free(vals[i])
	}
	for _, b := range refill {
		arm.Free(b)
	}
	return bench.Sample{Ops: ops, Allocs: allocs, Elapsed: el, Metrics: m}, nil
}

// fragVerdicts: what one Relocate pass must give back, and what it may
// cost, on the offheap arm.
func fragVerdicts(r *bench.Report) []bench.Verdict {
	s, why := find(r, "frag", "", "offheap", 1)
	metric := func(name, figure, target, key string, limit float64) bench.Verdict {
		if s == nil {
			return bench.Skip(name, figure, target, why)
		}
		v, ok := s.Metrics[key]
		if !ok {
			return bench.Skip(name, figure, target, "not measured")
		}
		measured := fmt.Sprintf("%.2f (median of %d runs)", v, s.Runs)
		if null, ok := s.Metrics[fragNullNs]; ok && key == fragDenseNs {
			measured = fmt.Sprintf("%.2f (median of %d runs; the loop alone %.2f)", v, s.Runs, null)
		}
		return bench.Verdict{Name: name, Figure: figure, Target: target, Value: v, Pass: v <= limit, Measured: measured}
	}
	vs := []bench.Verdict{
		metric("frag-relocated", "frag, offheap: resident / live after the eviction and one Relocate pass", "<= 1.30", fragRelocated, 1.3),
		metric("frag-refilled", "frag, offheap: resident / live after the refill with 1-4 KiB values", "<= 1.30", fragRefilled, 1.3),
		metric("frag-dense-pass", "frag, offheap: a Relocate pass over spans with nothing to gain, ns per block", "<= 10 ns", fragDenseNs, 10),
	}
	vs = append(vs, defragVerdicts(r, "frag", floorOf(s), fragEvicted, fragRefilled)...)
	const name, figure, target = "frag-pass-cost", "frag, offheap: the Relocate pass per block moved / Alloc + copy + Free of the same blocks", "<= 2.00x"
	switch {
	case s == nil:
		vs = append(vs, bench.Skip(name, figure, target, why))
	case s.Metrics[fragPassNs] == 0 || s.Metrics[fragCopyNs] == 0:
		vs = append(vs, bench.Skip(name, figure, target, "nothing moved"))
	default:
		p, c := s.Metrics[fragPassNs], s.Metrics[fragCopyNs]
		vs = append(vs, bench.Verdict{Name: name, Figure: figure, Target: target, Value: p / c, Pass: p/c <= 2,
			Measured: fmt.Sprintf("%.2fx (%s vs %s ns per block)", p/c, bench.Num(p), bench.Num(c))})
	}
	return vs
}

// floorOf is the frag shape's floor of a move, read-ns of the offheap
// arm's summary s, 0 where it was not measured.
func floorOf(s *bench.Summary) float64 {
	if s == nil {
		return 0
	}
	return s.Metrics[fragReadNs]
}

// nullRelocater is the dense passes' null arm: a RelocateAll that moves
// nothing, called through the same interface, so that the pass's loop, its
// loads and stores of the survivors' slices, is timed alone.
type nullRelocater struct{}

//go:noinline
func (nullRelocater) RelocateAll([][]byte) int { return 0 }

// readSurvivors copies the survivors' bytes into memory already written,
// and says what it took per block, in ns of the thread's CPU time (0 where
// the system has no such clock): a move's least work, the read of a block
// where it lies and the write of its copy, with no allocator at all. The
// survivors are as warm as the pass will find them (the copy by hand has
// just written them), and a preemption adds nothing to a thread's CPU
// time, so the figure is, if anything, low.
func readSurvivors(vals [][]byte, survivors []int) float64 {
	total := 0
	for _, i := range survivors {
		total += len(vals[i])
	}
	buf := make([]byte, total)
	bench.Touch(buf)
	runtime.LockOSThread() // the thread's clock times this goroutine only
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	n := 0
	for _, i := range survivors {
		n += copy(buf[n:], vals[i])
	}
	return float64((threadCPU() - t0).Nanoseconds()) / float64(max(len(survivors), 1))
}

// relocatePass offers every survivor to RelocateAll, fragBatch at a time,
// keeps the slices it returns, and says how many moved and how long the
// pass took, its gathering and scattering of the batches included.
func relocatePass(rl relocater, vals [][]byte, survivors []int, batch [][]byte) (moved int, took time.Duration) {
	t0 := time.Now()
	for len(survivors) > 0 {
		part := survivors[:min(fragBatch, len(survivors))]
		survivors = survivors[len(part):]
		batch = batch[:len(part)]
		for j, i := range part {
			batch[j] = vals[i]
		}
		moved += rl.RelocateAll(batch)
		for j, i := range part {
			vals[i] = batch[j]
		}
	}
	return moved, time.Since(t0)
}
