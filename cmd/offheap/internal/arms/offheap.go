package arms

import (
	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "offheap",
		Doc:     "offheap.NewHeap(Options{}): per-P magazines of the default depth",
		Default: true,
		New:     func() (bench.Allocator, error) { return newHeap(offheap.Options{}) },
	})
}

// newHeap makes a heap with opts. *offheap.Heap is itself an arm: it has
// Alloc, Free, AllocUnzeroed, Stats and Close. Freed pages go back to the OS
// at once, so that one trial's free memory does not stay mapped into the
// next trial's peak figures.
func newHeap(opts offheap.Options) (bench.Allocator, error) {
	if opts.ReleaseDelay == 0 {
		opts.ReleaseDelay = -1
	}
	h, err := offheap.NewHeap(opts)
	if err != nil {
		return nil, err
	}
	return h, nil
}
