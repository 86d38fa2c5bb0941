package shapes

import "github.com/offheap/offheap/cmd/offheap/internal/bench"

func init() {
	bench.RegisterArmShape(bench.ArmShape{Spec: bench.Spec{
		Name: "scratch",
		Doc: "cache-scratch: each worker frees a block the main goroutine allocated, then allocates, writes and frees its own small block; " +
			"an allocator that hands neighbouring bytes to different workers loses its scaling to false sharing",
		Work:       bench.FixedTotal,
		Quick:      true,
		Order:      50,
		Unit:       "iter",
		CrossFrees: true,
	}, Run: runScratch,
	})
}

const (
	scratchSize   = 16 // small enough that several workers' blocks share a cache line
	scratchWrites = 32 // writes per block per iteration
)

func runScratch(t *bench.Trial, arm bench.Allocator) (bench.Sample, error) {
	total := t.Size(1_000_000, 10_000_000)
	// The main goroutine allocates one block per worker, back to back, so
	// that they are neighbours.
	main := bench.ForWorker(arm, t.Workers)
	seed := make([][]byte, t.Workers)
	for w := range seed {
		seed[w] = main.Alloc(scratchSize)
		seed[w][0] = 1
	}
	el := bench.Parallel(t.Workers, func(w int) {
		a := bench.ForWorker(arm, w)
		a.Free(seed[w])
		for range bench.Split(total, t.Workers, w) {
			b := a.Alloc(scratchSize)
			for j := range scratchWrites {
				b[j%scratchSize]++
			}
			a.Free(b)
		}
	})
	return bench.Sample{Ops: int64(total), Allocs: int64(total + t.Workers), Elapsed: el}, nil
}
