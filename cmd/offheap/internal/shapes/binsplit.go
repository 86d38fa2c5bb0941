package shapes

import "github.com/offheap/offheap/cmd/offheap/internal/bench"

func init() {
	bench.RegisterArmShape(bench.ArmShape{Spec: bench.Spec{
		Name:  "binsplit",
		Doc:   "Alloc+Free pairs, each worker in its own size class (32 B + 16 B per worker): no shared class lock, so what is left is cache-line sharing",
		Work:  bench.FixedTotal,
		Quick: true,
		Order: 20,
		Unit:  "pair",
	}, Run: runBinsplit,
	})
}

func runBinsplit(t *bench.Trial, arm bench.Allocator) (bench.Sample, error) {
	total := t.Size(2_000_000, 20_000_000)
	el := bench.Parallel(t.Workers, func(w int) {
		a := bench.ForWorker(arm, w)
		size := 32 + 16*w
		for i := range bench.Split(total, t.Workers, w) {
			b := a.Alloc(size)
			b[0] = byte(i)
			a.Free(b)
		}
	})
	return bench.Sample{Ops: int64(total), Allocs: int64(total), Elapsed: el}, nil
}
