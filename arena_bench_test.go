package offheap

import (
	"fmt"
	"sync"
	"testing"
)

// Benchmarks of the arena, against make and the heap's Alloc+Free, and of how
// a shared arena scales over goroutines, beside a compute-only control. Run:
//
//	go test -run XXX -bench 'Arena|Make|HeapPair|ComputeScale' -count 5 .

// arenaSink keeps results alive, so make is not turned into a stack
// allocation; every arm assigns to it alike.
var arenaSink []byte

var arenaBenchSizes = []int{16, 64, 256}

// arenaCycle is how many bytes a benchmark hands out before it resets the
// arena: a batch that outgrows the L2 cache, so the arena is not measured
// on memory that never leaves it.
const arenaCycle = 1 << 20

func BenchmarkArenaAlloc(b *testing.B) {
	h := newTestHeap(b, Options{})
	for _, n := range arenaBenchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			a := h.NewArena()
			defer a.Release()
			per := arenaCycle / n
			i := 0
			for b.Loop() {
				arenaSink = a.Alloc(n)
				if i++; i == per {
					a.Reset() // part of the cost: the arena's way to free
					i = 0
				}
			}
		})
	}
}

// BenchmarkArenaAllocUnzeroed is BenchmarkArenaAlloc's loop for the sizes
// above arenaFastMax, whose allocations are cleared one by one: Alloc
// against AllocUnzeroed, which skips that.
func BenchmarkArenaAllocUnzeroed(b *testing.B) {
	h := newTestHeap(b, Options{})
	for _, n := range []int{1024, 4096} {
		for _, arm := range []struct {
			name  string
			alloc func(a *Arena, n int) []byte
		}{{"zeroed", (*Arena).Alloc}, {"unzeroed", (*Arena).AllocUnzeroed}} {
			b.Run(fmt.Sprintf("size=%d/arm=%s", n, arm.name), func(b *testing.B) {
				a := h.NewArena()
				defer a.Release()
				per := arenaCycle / n
				i := 0
				for b.Loop() {
					arenaSink = arm.alloc(a, n)
					if i++; i == per {
						a.Reset()
						i = 0
					}
				}
			})
		}
	}
}

func BenchmarkMake(b *testing.B) {
	for _, n := range arenaBenchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				arenaSink = make([]byte, n)
			}
		})
	}
}

func BenchmarkHeapPair(b *testing.B) {
	h := newTestHeap(b, Options{})
	for _, n := range arenaBenchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				p := h.Alloc(n)
				arenaSink = p
				h.Free(p)
			}
		})
	}
}

// arenaScaleTotal is the fixed work of one op of the scale benchmarks, split
// evenly over the workers: 1M allocations of 64 bytes (64 MiB, so memory
// bandwidth, not the arena, bounds it; the arena shape of offheap bench runs
// cache-sized rounds), or as many units of arithmetic.
const arenaScaleTotal = 1 << 20

// arenaScaleSlot is one worker's result, padded to its own cache lines so that
// workers do not share a line through the harness.
type arenaScaleSlot struct {
	v uint64
	p []byte
	_ [arenaLine - 32]byte
}

// runArenaScale runs one op: work(w, count) on each of workers goroutines, the
// total fixed.
func runArenaScale(workers int, slots []arenaScaleSlot, work func(s *arenaScaleSlot, count int)) {
	var wg sync.WaitGroup
	per := arenaScaleTotal / workers
	for w := 1; w < workers; w++ {
		s := &slots[w]
		wg.Go(func() { work(s, per) })
	}
	work(&slots[0], per) // the benchmark's goroutine is worker 0
	wg.Wait()
}

func BenchmarkArenaScale(b *testing.B) {
	h := newTestHeap(b, Options{})
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			a := h.NewArena()
			defer a.Release()
			slots := make([]arenaScaleSlot, workers+1)
			work := func(s *arenaScaleSlot, count int) {
				a := a // hoisted: the closure's captured variables stay read-only
				var p []byte
				for range count {
					p = a.Alloc(64)
				}
				s.p = p
			}
			for b.Loop() {
				runArenaScale(workers, slots, work)
				a.Reset()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/arenaScaleTotal, "ns/alloc")
		})
	}
}

// BenchmarkComputeScale is the control for BenchmarkArenaScale: the same
// harness and split, with arithmetic instead of allocation. If it does not
// speed up about 2x at 2 workers, the machine is not giving 2 cores.
func BenchmarkComputeScale(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			slots := make([]arenaScaleSlot, workers+1)
			work := func(s *arenaScaleSlot, count int) {
				x := uint64(count) | 1
				for range count {
					for range 4 { // xorshift: a dependent chain of a few ns
						x ^= x << 13
						x ^= x >> 7
						x ^= x << 17
					}
				}
				s.v = x
			}
			for b.Loop() {
				runArenaScale(workers, slots, work)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/arenaScaleTotal, "ns/unit")
		})
	}
}
