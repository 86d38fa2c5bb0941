package shapes

import (
	"fmt"
	"runtime"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// The rows of the memory shapes (frag, drift): in the default run, a heap as
// the offheap arm makes one but with the default ReleaseDelay, and make;
// with -arms, every named arm whose memory a probe can read (the offheap
// arms, make, the C allocators of an offheap_cgo build), the two ways
// standing in for the offheap and go-make arms. They are ways that arms
// join, not arm shapes, so that the default run spends their time only on
// the rows their verdicts need, and so that a Relocate pass is timed as a
// program would run it (the offheap arm's heap, ReleaseDelay -1, pays a
// system call for each span the pass empties: measured, 150 times the
// pass's cost per block).

// memoryShape returns the WayShape of a memory shape: spec, run over each
// way's allocator and over every arm that joins.
func memoryShape(spec bench.Spec, run func(t *bench.Trial, a bench.Allocator) (bench.Sample, error)) bench.WayShape {
	return bench.WayShape{Spec: spec, Ways: memoryWays(run), Arms: run, Joins: bench.Measurable}
}

// memoryWays returns the memory shapes' ways, each running run over its
// allocator.
func memoryWays(run func(t *bench.Trial, a bench.Allocator) (bench.Sample, error)) []bench.Way {
	return []bench.Way{
		{Name: "offheap", Doc: "offheap.NewHeap(Options{}): the default heap, its free pages back to the OS a second after their Free or at Trim", Run: func(t *bench.Trial) (bench.Sample, error) {
			// The default ReleaseDelay, not the offheap arm's -1: every
			// reading Trims first, which releases what the delay holds,
			// and a Relocate pass is timed as a program would run it,
			// without a system call for each span it empties.
			h, err := offheap.NewHeap(offheap.Options{})
			if err != nil {
				return bench.Sample{}, err
			}
			defer h.Close()
			s, err := run(t, h)
			// The census check the runner makes of an arm's heap.
			if st := h.Stats(); err == nil && (st.Allocs != uint64(s.Allocs) || st.InUseBytes != 0) {
				err = fmt.Errorf("census: the heap counted %d allocations, the shape made %d; %d bytes still in use", st.Allocs, s.Allocs, st.InUseBytes)
			}
			return s, err
		}},
		defragWay(run),
		{Name: "go-make", Doc: "make([]byte, n), dropped for the collector to free", Run: func(t *bench.Trial) (bench.Sample, error) {
			return run(t, goValues{})
		}},
	}
}

// goValues is the go-make way's allocator: its values are the Go heap's
// (bench.GoHeap).
type goValues struct{}

func (goValues) Alloc(n int) []byte { return make([]byte, n) }
func (goValues) Free(b []byte)      { runtime.KeepAlive(b) }
func (goValues) GoHeap()            {}

// residentMetric is the resident / live column of the churn shapes.
var residentMetric = bench.Metric{Name: bench.MetricResident, Doc: "resident / live bytes at the end of the timed work, the live set " +
	"held (larson: the slots full; live-k: the last round's blocks; binsplit: each worker's last block, the heap's floor), for the arms " +
	"that can say: offheap's heap as it is (its magazines' free blocks included), make's Go heap's objects and their spans' free room after a " +
	"collection, less what the shape held before its values"}
