package shapes

import "github.com/offheap/offheap/cmd/offheap/internal/bench"

func init() {
	bench.RegisterArmShape(bench.ArmShape{Spec: bench.Spec{
		Name:    "binsplit",
		Doc:     "Alloc+Free pairs, each worker in its own size class (32 B + 16 B per worker): no shared class lock, so what is left is cache-line sharing",
		Work:    bench.FixedTotal,
		Quick:   true,
		Order:   20,
		Unit:    "pair",
		Metrics: []bench.Metric{residentMetric},
	}, Run: runBinsplit,
	})
}

func runBinsplit(t *bench.Trial, arm bench.Allocator) (bench.Sample, error) {
	total := t.Size(2_000_000, 20_000_000)
	last := make([][]byte, t.Workers) // each worker's last block, freed after the memory reading
	probe := bench.NewMemoryProbe(arm, false)
	el := bench.Parallel(t.Workers, func(w int) {
		a := bench.ForWorker(arm, w)
		size := 32 + 16*w
		n := bench.Split(total, t.Workers, w)
		for i := range n {
			b := a.Alloc(size)
			b[0] = byte(i)
			if i == n-1 {
				last[w] = b
				break
			}
			a.Free(b)
		}
	})
	var live int64
	for _, b := range last {
		live += int64(len(b))
	}
	m := map[string]float64{}
	probe.Record(m, bench.MetricResident, live)
	for w, b := range last {
		if b != nil {
			bench.ForWorker(arm, w).Free(b)
		}
	}
	return bench.Sample{Ops: int64(total), Allocs: int64(total), Elapsed: el, Metrics: m}, nil
}
