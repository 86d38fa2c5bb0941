package shapes

import (
	"fmt"

	"github.com/offheap/offheap/bench"
)

// liveKSizes are the classes each worker cycles through: one op frees the
// oldest of k live blocks of a class and allocates its replacement.
var liveKSizes = [...]int{16, 64, 256, 1024}

var liveKs = []int{1, 3, 8, 32}

func init() {
	var subs []bench.Sub
	for _, k := range liveKs {
		subs = append(subs, bench.Sub{Name: fmt.Sprintf("k=%d", k), Param: k})
	}
	bench.RegisterShape(bench.Shape{
		Name:     "live-k",
		Doc:      "k blocks live per class per worker over 4 classes; each op frees the oldest and allocates anew: the depth trap (k = 1, 3, 8, 32)",
		Work:     bench.FixedTotal,
		Quick:    true,
		Order:    30,
		Unit:     "op",
		Subs:     subs,
		Verdicts: liveKVerdicts,
		Run:      runLiveK,
	})
}

func runLiveK(t *bench.Trial) (bench.Sample, error) {
	k := t.Sub.Param.(int)
	total := t.Size(2_000_000, 20_000_000)
	const nc = len(liveKSizes)
	el := bench.Parallel(t.Workers, func(w int) {
		a := bench.ForWorker(t.Alloc, w)
		sizes := liveKSizes
		// One ring of k blocks per class, oldest at pos[c].
		var rings [nc][][]byte
		var pos [nc]int
		for c := range rings {
			rings[c] = make([][]byte, k)
			for j := range rings[c] {
				rings[c][j] = a.Alloc(sizes[c])
			}
		}
		for i := range bench.Split(total, t.Workers, w) {
			c := i % nc
			ring, p := rings[c], pos[c]
			a.Free(ring[p])
			b := a.Alloc(sizes[c])
			b[0] = byte(i)
			ring[p] = b
			if p++; p == k {
				p = 0
			}
			pos[c] = p
		}
		for c := range rings {
			for _, b := range rings[c] {
				a.Free(b)
			}
		}
	})
	allocs := int64(total) + int64(t.Workers*nc*k)
	return bench.Sample{Ops: int64(total), Allocs: allocs, Elapsed: el}, nil
}

// liveKVerdicts: magazines must never make things slower than no magazines,
// whatever k, at any worker count.
func liveKVerdicts(r *bench.Report) []bench.Verdict {
	var vs []bench.Verdict
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
		skip := ""
		for _, w := range ws {
			o, why := find(r, "live-k", sub, "offheap", w)
			n, why2 := find(r, "live-k", sub, "offheap-nomag", w)
			if o == nil || n == nil {
				skip = why + why2
				break
			}
			if v := o.MinNs / n.MinNs; v > worst {
				worst, worstW, hit = v, w, o.Metrics[bench.MetricHitRate]
			}
		}
		if skip != "" {
			vs = append(vs, bench.Skip(name, figure, target, skip))
			continue
		}
		vs = append(vs, bench.Verdict{Name: name, Figure: figure, Target: target, Value: worst, Pass: worst <= 1,
			Measured: fmt.Sprintf("%.2fx at %d worker(s), magazine hit rate %.1f%%", worst, worstW, hit)})
	}
	return vs
}
