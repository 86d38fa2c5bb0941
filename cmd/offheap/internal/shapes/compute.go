package shapes

import "github.com/offheap/offheap/cmd/offheap/internal/bench"

func init() {
	bench.RegisterWayShape(bench.WayShape{
		Spec: bench.Spec{
			Name:  "compute",
			Doc:   "pure compute, no allocation: the control that says how well this machine scales at all",
			Work:  bench.FixedTotal,
			Quick: true,
			Order: 0,
			Unit:  "iter",
		},
		Ways:    []bench.Way{{Name: "compute", Doc: "a chain of xorshift steps per worker, no memory traffic", Run: runCompute}},
		Control: true,
	})
}

func runCompute(t *bench.Trial) (bench.Sample, error) {
	total := t.Size(40_000_000, 400_000_000)
	out := make([]bench.Padded, t.Workers)
	el := bench.Parallel(t.Workers, func(w int) {
		r := bench.NewRand(uint64(w) + 1)
		var acc uint64
		for range bench.Split(total, t.Workers, w) {
			acc += r.Next()
		}
		out[w].N = int64(acc) // keeps the loop from being optimized away
	})
	return bench.Sample{Ops: int64(total), Elapsed: el}, nil
}
