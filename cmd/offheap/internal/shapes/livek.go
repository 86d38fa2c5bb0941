package shapes

import (
	"fmt"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// liveKSizes are the classes each worker cycles through: a round allocates k
// blocks of each class, then frees them all, so k blocks of a class are live
// at once. (Freeing the oldest and allocating its replacement one at a time
// would keep only one block in flight and could not see the trap.)
var liveKSizes = [...]int{16, 64, 256, 1024}

var liveKs = []int{1, 3, 8, 32}

func init() {
	var subs []bench.Sub
	for _, k := range liveKs {
		subs = append(subs, bench.Sub{Name: fmt.Sprintf("k=%d", k), Param: k})
	}
	bench.RegisterArmShape(bench.ArmShape{Spec: bench.Spec{
		Name:     "live-k",
		Doc:      "rounds of k allocations per class over 4 classes, then k frees: k blocks live per class per worker, the depth trap (k = 1, 3, 8, 32)",
		Work:     bench.FixedTotal,
		Quick:    true,
		Order:    30,
		Unit:     "pair",
		Subs:     subs,
		Metrics:  []bench.Metric{residentMetric},
		Verdicts: liveKVerdicts,
	}, Run: runLiveK,
	})
}

func runLiveK(t *bench.Trial, arm bench.Allocator) (bench.Sample, error) {
	k := t.Sub.Param.(int)
	const nc = len(liveKSizes)
	round := k * nc
	rounds := max(t.Size(2_000_000, 20_000_000)/round, 1)
	// Each worker's last round keeps its blocks, for the memory reading,
	// and frees them after it, untimed.
	held := make([][][]byte, t.Workers)
	for w := range held {
		held[w] = make([][]byte, round)
	}
	probe := bench.NewMemoryProbe(arm, false)
	el := bench.Parallel(t.Workers, func(w int) {
		a := bench.ForWorker(arm, w)
		sizes := liveKSizes
		live := held[w]
		n := bench.Split(rounds, t.Workers, w)
		for r := range n {
			for i := range live {
				b := a.Alloc(sizes[i%nc])
				b[0] = byte(r)
				live[i] = b
			}
			if r == n-1 {
				break
			}
			for _, b := range live {
				a.Free(b)
			}
		}
	})
	var bytes int64
	for _, live := range held {
		for _, b := range live {
			bytes += int64(len(b))
		}
	}
	m := map[string]float64{}
	probe.Record(m, bench.MetricResident, bytes)
	for w, live := range held {
		a := bench.ForWorker(arm, w)
		for _, b := range live {
			if b != nil {
				a.Free(b)
			}
		}
	}
	total := int64(rounds * round)
	return bench.Sample{Ops: total, Allocs: total, Elapsed: el, Metrics: m}, nil
}

// liveKVerdicts: magazines must never make things slower than no magazines,
// whatever k, at any worker count.
func liveKVerdicts(r *bench.Report) []bench.Verdict {
	var vs []bench.Verdict
	var subs []string
	for _, k := range liveKs {
		subs = append(subs, fmt.Sprintf("k=%d", k))
	}
	var ws []int
	for _, sh := range r.Shapes {
		if sh.Name == "live-k" {
			ws = sh.Workers
		}
	}
	for _, k := range liveKs {
		sub := fmt.Sprintf("k=%d", k)
		name := "live-k-" + sub
		figure := fmt.Sprintf("live-k %s: offheap / offheap-nomag, worst over worker counts", sub)
		const target = "<= 1.00x"
		if len(ws) == 0 {
			vs = append(vs, bench.Skip(name, figure, target, "live-k not run"))
			continue
		}
		worst, worstW, hit := 0.0, 0, 0.0
		var cells []*bench.Summary
		skip := ""
		for _, w := range ws {
			o, why := find(r, "live-k", sub, "offheap", w)
			n, why2 := find(r, "live-k", sub, "offheap-nomag", w)
			if o == nil || n == nil {
				skip = missing(why, why2)
				break
			}
			if v := o.MinNs / n.MinNs; v > worst {
				worst, worstW, hit, cells = v, w, o.Metrics[bench.MetricHitRate], []*bench.Summary{o, n}
			}
		}
		if skip != "" {
			vs = append(vs, bench.Skip(name, figure, target, skip))
			continue
		}
		vs = append(vs, atMost(bench.Verdict{Name: name, Figure: figure, Target: target, Value: worst,
			Measured: fmt.Sprintf("%.2fx at %d worker(s), magazine hit rate %.1f%%", worst, worstW, hit)}, 1, cells...))
	}
	return append(vs, checkCostVerdicts(r, "live-k", subs)...)
}
