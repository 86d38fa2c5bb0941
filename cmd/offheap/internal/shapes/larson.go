package shapes

import (
	"time"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArmShape(bench.ArmShape{Spec: bench.Spec{
		Name: "larson",
		Doc: "Larson: random frees and allocations (16-1024 B) over per-worker slot arrays; after each round the arrays pass to new goroutines, " +
			"so blocks outlive the goroutine that allocated them",
		Work:       bench.FixedTotal,
		Quick:      true,
		Order:      60,
		Unit:       "op",
		CrossFrees: true,
		Metrics:    []bench.Metric{residentMetric},
	}, Run: runLarson,
	})
}

const (
	larsonSlots  = 512
	larsonRounds = 8
	larsonMin    = 16
	larsonMax    = 1024
)

func runLarson(t *bench.Trial, arm bench.Allocator) (bench.Sample, error) {
	total := t.Size(1_000_000, 10_000_000)
	nw := t.Workers
	handles := make([]bench.Allocator, nw)
	slots := make([][][]byte, nw)
	for w := range slots {
		slots[w] = make([][]byte, larsonSlots)
	}
	probe := bench.NewMemoryProbe(arm, false)
	for w := range slots {
		handles[w] = bench.ForWorker(arm, w)
		r := bench.NewRand(uint64(w) + 7)
		for i := range slots[w] {
			slots[w][i] = handles[w].Alloc(larsonMin + r.Intn(larsonMax-larsonMin+1))
		}
	}
	var el time.Duration
	for round := range larsonRounds {
		// Each round runs on fresh goroutines, and worker w takes over
		// the array another worker used last round.
		el += bench.Parallel(nw, func(w int) {
			a := handles[w]
			s := slots[(w+round)%nw]
			r := bench.NewRand(uint64(round*nw+w) + 1)
			n := bench.Split(bench.Split(total, nw, w), larsonRounds, round)
			for range n {
				i := r.Intn(larsonSlots)
				a.Free(s[i])
				b := a.Alloc(larsonMin + r.Intn(larsonMax-larsonMin+1))
				b[0] = 1
				s[i] = b
			}
		})
	}
	var live int64
	for w := range slots {
		for _, b := range slots[w] {
			live += int64(len(b))
		}
	}
	m := map[string]float64{}
	probe.Record(m, bench.MetricResident, live)
	for w := range slots {
		for _, b := range slots[w] {
			handles[w].Free(b)
		}
	}
	return bench.Sample{Ops: int64(total), Allocs: int64(total + nw*larsonSlots), Elapsed: el, Metrics: m}, nil
}
