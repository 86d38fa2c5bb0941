package offheap

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// sharedBenchPairs is the fixed total of Retain+Release pairs per benchmark
// iteration, split evenly across the workers: perfect scaling halves the
// time per iteration when the workers double.
const sharedBenchPairs = 4 << 20

// sharedPad keeps one worker's state on cache lines of its own.
type sharedPad struct {
	_ [64]byte
	s Shared
	n atomic.Int64
	x uint64
	_ [64]byte
}

// sharedWorkers runs body(w, pairs/workers) on each of the workers per
// iteration and reports ns per pair (of the whole iteration).
func sharedWorkers(b *testing.B, workers int, body func(w, n int)) {
	per := sharedBenchPairs / workers
	for b.Loop() {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { body(w, per) })
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/sharedBenchPairs, "ns/pair")
}

func sharedWorkerCounts() []int {
	p := runtime.GOMAXPROCS(0)
	if p == 1 {
		return []int{1}
	}
	return []int{1, p}
}

// BenchmarkShared: rows A (static), B (plain-shared, hot-shared), C (own,
// own-hot) and the bare atomic pair (atomic-own) that a plain handle's
// uncontended Retain+Release is measured against. Every worker hoists its
// handle into a local before its loop.
func BenchmarkShared(b *testing.B) {
	h, err := NewHeap(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	static := StaticShared(make([]byte, 64))
	for _, workers := range sharedWorkerCounts() {
		name := fmt.Sprintf("workers=%d", workers)
		pads := make([]sharedPad, workers)

		b.Run("static/"+name, func(b *testing.B) {
			sharedWorkers(b, workers, func(w, n int) {
				s := static
				for range n {
					s.Retain().Release()
				}
			})
		})
		for _, hot := range []bool{false, true} {
			row := "plain-shared/"
			var opts []SharedOption
			if hot {
				row = "hot-shared/"
				opts = append(opts, Hot())
			}
			shared := h.NewShared(64, opts...)
			for w := range pads {
				pads[w].s = shared // each worker reads its own copy
			}
			b.Run(row+name, func(b *testing.B) {
				sharedWorkers(b, workers, func(w, n int) {
					s := pads[w].s
					for range n {
						s.Retain().Release()
					}
				})
			})
			shared.Release()
		}
		for _, hot := range []bool{false, true} {
			row := "own/"
			var opts []SharedOption
			if hot {
				row = "own-hot/"
				opts = append(opts, Hot())
			}
			for w := range pads {
				pads[w].s = h.NewShared(64, opts...)
			}
			b.Run(row+name, func(b *testing.B) {
				sharedWorkers(b, workers, func(w, n int) {
					s := pads[w].s
					for range n {
						s.Retain().Release()
					}
				})
			})
			for w := range pads {
				pads[w].s.Release()
			}
		}
		b.Run("atomic-own/"+name, func(b *testing.B) {
			sharedWorkers(b, workers, func(w, n int) {
				c := &pads[w].n
				for range n {
					c.Add(1)
					c.Add(-1)
				}
			})
		})
	}
}

// BenchmarkSharedCompute is the control: the same split of a compute-only
// loop (an xorshift step per pair), whose speedup is what the machine gives.
func BenchmarkSharedCompute(b *testing.B) {
	for _, workers := range sharedWorkerCounts() {
		pads := make([]sharedPad, workers)
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			sharedWorkers(b, workers, func(w, n int) {
				x := uint64(w) + 88172645463325252
				for range n {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
				}
				pads[w].x = x
			})
		})
	}
}
