package shapes

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArmShape(bench.ArmShape{Spec: bench.Spec{
		Name: "prodcons",
		Doc: "xmalloc-style: W producers allocate 64 B blocks, W consumers free them, in batches of 64 through a bounded channel; " +
			"peak mapped bytes (each half of the run) and peak RSS",
		Work:       bench.FixedTotal,
		Quick:      true,
		Order:      40,
		Unit:       "block",
		CrossFrees: true,
		Metrics: []bench.Metric{
			{Name: "frees/s", Doc: "blocks freed per second, all consumers together", HigherIsBetter: true},
			{Name: "peak-mapped-MiB", Doc: "the heap's largest mapped size during the trial, sampled every 2 ms (offheap arms)"},
			{Name: "mapped-1st-MiB", Doc: "the largest mapped size in the first half of the trial (offheap arms)"},
			{Name: "mapped-2nd-MiB", Doc: "the largest mapped size in the second half: above the first half means the heap grows (offheap arms)"},
			{Name: "peak-rss-MiB", Doc: "the process's largest resident set during the trial, sampled every 2 ms"},
			{Name: prodConsPeakRes, Doc: "the heap's largest resident bytes during the trial, sampled every 2 ms, over the most bytes the batches can hold in flight (offheap arms)"},
		},
		Verdicts: prodConsVerdicts,
	}, Run: runProdCons,
	})
}

const (
	prodConsSize    = 64
	prodConsBatch   = 64
	prodConsPeakRes = "peak-res/live"
)

func runProdCons(t *bench.Trial, arm bench.Allocator) (bench.Sample, error) {
	total := t.Size(1_000_000, 10_000_000)
	nw := t.Workers
	// Batches circulate: producers take an empty one, fill it and send it;
	// consumers free its blocks and return it. So the harness allocates
	// nothing on the Go heap while timed.
	full := make(chan [][]byte, 4*nw)
	empty := make(chan [][]byte, 6*nw)
	for range cap(empty) {
		empty <- make([][]byte, 0, prodConsBatch)
	}
	var producing atomic.Int32
	producing.Store(int32(nw))

	// The sampler watches mapped bytes (offheap arms) and RSS while the
	// shape runs. VmRSS, not VmHWM: the high-water mark is process-wide and
	// never falls, so it would carry earlier trials' peaks.
	ss, hasStats := arm.(bench.StatsSource)
	rs, hasResident := arm.(bench.Resident)
	type point struct {
		at     time.Duration
		mapped uint64
	}
	var points []point
	var peakRSS, peakRes uint64
	stop := make(chan struct{})
	var sampled sync.WaitGroup
	t0 := time.Now()
	sampled.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			p := point{at: time.Since(t0)}
			if hasStats {
				p.mapped = ss.Stats().MappedBytes
			}
			points = append(points, p)
			peakRSS = max(peakRSS, bench.RSS())
			if hasResident {
				if n, err := rs.ResidentBytes(); err == nil {
					peakRes = max(peakRes, n)
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})

	el := bench.Parallel(2*nw, func(g int) {
		if g < nw { // producer
			a := bench.ForWorker(arm, g)
			n := bench.Split(total, nw, g)
			for n > 0 {
				batch := <-empty
				for range min(n, prodConsBatch) {
					b := a.Alloc(prodConsSize)
					b[0] = 1
					batch = append(batch, b)
				}
				n -= len(batch)
				full <- batch
			}
			if producing.Add(-1) == 0 {
				close(full)
			}
			return
		}
		a := bench.ForWorker(arm, g)
		for batch := range full {
			for _, b := range batch {
				a.Free(b)
			}
			empty <- batch[:0]
		}
	})
	close(stop)
	sampled.Wait()

	m := map[string]float64{
		"frees/s":      float64(total) / el.Seconds(),
		"peak-rss-MiB": mib(peakRSS),
	}
	if peakRes > 0 {
		// Every block in flight is in one of the batches that circulate.
		m[prodConsPeakRes] = float64(peakRes) / float64(cap(empty)*prodConsBatch*prodConsSize)
	}
	if hasStats {
		half := time.Since(t0) / 2
		var first, second, peak uint64
		for _, p := range points {
			if p.at < half {
				first = max(first, p.mapped)
			} else {
				second = max(second, p.mapped)
			}
			peak = max(peak, p.mapped)
		}
		m["peak-mapped-MiB"] = mib(peak)
		m["mapped-1st-MiB"] = mib(first)
		m["mapped-2nd-MiB"] = mib(second)
	}
	return bench.Sample{Ops: int64(total), Allocs: int64(total), Elapsed: el, Metrics: m}, nil
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// prodConsVerdicts: handing blocks to another goroutine to free must cost at
// most half the throughput of freeing them where they were allocated, and
// must not make the heap grow.
func prodConsVerdicts(r *bench.Report) []bench.Verdict {
	const name, figure, target = "prodcons", "prodcons throughput / same-goroutine pairs throughput, offheap, 64 B, 1 worker", ">= 0.50x"
	var vs []bench.Verdict
	pc, why := find(r, "prodcons", "", "offheap", 1)
	pp, why2 := find(r, "pairs", pairs64, "offheap", 1)
	if pc == nil || pp == nil {
		vs = append(vs, bench.Skip(name, figure, target, missing(why, why2)))
	} else {
		v := pp.MinNs / pc.MinNs
		vs = append(vs, needsIdleCore(atLeast(bench.Verdict{Name: name, Figure: figure, Target: target, Value: v,
			Measured: fmt.Sprintf("%.2fx (%s vs %s ns per block)", v, bench.Num(pc.MinNs), bench.Num(pp.MinNs))}, 0.5, pc, pp), r, pairIdleCore))
	}

	return append(vs, prodConsFlat(r))
}

// flatSlackMiB is the growth from the first half's peak of mapped bytes to
// the second's that prodConsFlat takes for the noise of where spans are
// carved, not for growth: eight spans of 8 KiB. At one worker the heap maps
// about 40 KiB, and a span carved a little later (the halves read 40 and
// 52 KiB in one run of four) is a third of it, where a heap that grows
// with the blocks handed over grows by megabytes.
const flatSlackMiB = 64.0 / 1024

// prodConsFlat judges that handing blocks over does not make the heap
// grow: at every worker count, the second half's peak of mapped bytes is
// at most 1.25 times the first half's, or at most flatSlackMiB above it.
// The value is the worst ratio of the worker counts that miss, or of all
// where none does.
func prodConsFlat(r *bench.Report) bench.Verdict {
	const name, figure, target = "prodcons-flat", "prodcons mapped bytes, offheap: peak of the 2nd half / peak of the 1st half, worst worker count", "<= 1.25x, or 64 KiB more"
	var ws []int
	for _, sh := range r.Shapes {
		if sh.Name == "prodcons" {
			ws = sh.Workers
		}
	}
	worst, worstW, m1, m2, pass := 0.0, 0, 0.0, 0.0, true
	for _, w := range ws {
		s := r.Find("prodcons", "", "offheap", w)
		if s == nil || s.Metrics["mapped-1st-MiB"] == 0 {
			continue
		}
		a, b := s.Metrics["mapped-1st-MiB"], s.Metrics["mapped-2nd-MiB"]
		ok := b <= 1.25*a || b-a <= flatSlackMiB
		if v := b / a; (pass && !ok) || (ok == pass && v >= worst) || worstW == 0 {
			worst, worstW, m1, m2 = v, w, a, b
		}
		pass = pass && ok
	}
	if worstW == 0 {
		return bench.Skip(name, figure, target, "prodcons with the offheap arm not run")
	}
	return bench.Verdict{Name: name, Figure: figure, Target: target, Value: worst, Pass: pass,
		Measured: fmt.Sprintf("%.2fx at %d worker(s) (%.3f then %.3f MiB)", worst, worstW, m1, m2)}
}
