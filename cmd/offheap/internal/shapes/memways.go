package shapes

import (
	"fmt"
	"runtime"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// The rows of the memory shapes (frag, drift): a heap as the offheap arm
// makes one, and make. They are ways, not arms, so that the default run
// spends their time only on the rows whose memory it can read.

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
