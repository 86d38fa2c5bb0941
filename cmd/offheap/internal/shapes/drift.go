package shapes

import (
	"fmt"
	"math"
	"time"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterWayShape(memoryShape(bench.Spec{
		Name: "drift",
		Doc: "a cache of 8 MiB of values whose sizes drift from 16-64 B to 2-8 KiB and back over the run, each insert evicting values at random " +
			"to stay at its size; resident / live read 8 times (Trim, or FreeOSMemory, first), its peak and its last; no Relocate but offheap-defrag's rule",
		Work:      bench.FixedTotal,
		Quick:     true,
		Order:     64,
		Unit:      "op",
		Workers:   []int{1},
		FixedSize: true, // the live size against the spans is the point
		Metrics: append([]bench.Metric{
			{Name: driftPeak, Doc: "the largest resident / live bytes of the readings", Label: "peak resident / live bytes", Target: 1.3},
			{Name: driftLast, Doc: "resident / live bytes at the end, the sizes back where they started"},
		}, defragMetrics...),
		Plot:     []string{driftPeak, defragCPU},
		Verdicts: driftVerdicts,
	}, runDrift))
}

// The drift shape's metrics.
const (
	driftPeak = "peak"
	driftLast = "last"
)

const (
	driftLive     = 8 << 20 // bytes the cache holds
	driftReadings = 8
)

// driftSize draws a value's size at phase p of the run, 0 to 1: a range
// from 16-64 B at either end to 2-8 KiB in the middle, log-uniform within.
func driftSize(r *bench.Rand, p float64) int {
	lo := 16 * math.Pow(128, math.Sin(math.Pi*p)) // 16 B at the ends, 2 KiB in the middle
	return int(lo * math.Pow(4, float64(r.Intn(1<<16))/(1<<16)))
}

// runDrift: a cache at a fixed live size whose values drift in size, with
// random evictions. The timed ops are its Allocs and Frees.
func runDrift(t *bench.Trial, row bench.Allocator) (bench.Sample, error) {
	arm := bench.ForWorker(row, 0) // one worker: a Local arm's own Local
	ops := t.Size(150_000, 1_500_000)
	vals := make([][]byte, 0, driftLive/32)
	bench.Touch(vals)
	m := map[string]float64{}
	probe := bench.NewMemoryProbe(row, true)
	r := bench.NewRand(23)
	var live, allocs int64
	var el time.Duration
	peak := 0.0
	every := ops / driftReadings
	d, _ := row.(*defragHeap) // nil but for the offheap-defrag way
	t0 := time.Now()
	d.start()
	for i := range ops {
		b := arm.Alloc(driftSize(&r, float64(i)/float64(ops)))
		b[0] = 1
		allocs++
		vals = append(vals, b)
		live += int64(len(b))
		for live > driftLive {
			k := r.Intn(len(vals))
			live -= int64(len(vals[k]))
			arm.Free(vals[k])
			vals[k] = vals[len(vals)-1]
			vals[len(vals)-1] = nil // for make's collector
			vals = vals[:len(vals)-1]
		}
		if d != nil {
			d.tick(live, vals)
		}
		if (i+1)%every == 0 {
			d.stop()
			el += time.Since(t0)
			if v, ok := probe.Ratio(live); ok {
				peak = max(peak, v)
				m[driftLast] = v
			}
			t0 = time.Now()
			d.start()
		}
	}
	d.stop()
	el += time.Since(t0)
	if peak > 0 {
		m[driftPeak] = peak
	}
	if d != nil {
		d.record(m)
		allocs += int64(d.moved)
	}
	for _, b := range vals {
		arm.Free(b)
	}
	return bench.Sample{Ops: int64(ops), Allocs: allocs, Elapsed: el, Metrics: m}, nil
}

// driftVerdicts: with no Relocate, offheap's peak resident / live on the
// drift must be below make's, and no worse than jemalloc's (an arm of the
// offheap_cgo build only, selected with -arms).
func driftVerdicts(r *bench.Report) []bench.Verdict {
	return append([]bench.Verdict{
		driftAgainst(r, "drift-peak", "go-make", "< 1.00x", func(a, b float64) bool { return a < b }, ""),
		driftAgainst(r, "drift-peak-jemalloc", "jemalloc", "<= 1.00x", func(a, b float64) bool { return a <= b },
			"the jemalloc arm did not run (build with -tags offheap_cgo)"),
	}, defragVerdicts(r, "drift", 0, driftPeak)...)
}

// driftAgainst judges offheap's peak resident / live on the drift over
// other's by pass; absent, when set, is the reason given when other's row
// did not run.
func driftAgainst(r *bench.Report, name, other, target string, pass func(a, b float64) bool, absent string) bench.Verdict {
	figure := "drift, peak resident / live, no Relocate: offheap / " + other
	o, why := find(r, "drift", "", "offheap", 1)
	g, why2 := find(r, "drift", "", other, 1)
	if g == nil && absent != "" {
		why2 = absent
	}
	if o == nil || g == nil {
		return bench.Skip(name, figure, target, missing(why, why2))
	}
	a, b := o.Metrics[driftPeak], g.Metrics[driftPeak]
	if a == 0 || b == 0 {
		return bench.Skip(name, figure, target, "not measured")
	}
	return bench.Verdict{Name: name, Figure: figure, Target: target, Value: a / b, Pass: pass(a, b),
		Measured: fmt.Sprintf("%.2fx (%.2f vs %.2f, medians of %d runs)", a/b, a, b, o.Runs)}
}
