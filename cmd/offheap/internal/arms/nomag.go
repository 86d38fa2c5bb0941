package arms

import (
	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "offheap-nomag",
		Doc:     "offheap with MagazineDepth -1: every op takes the central lock; the control every speed claim is measured against",
		Default: true,
		New:     func() (bench.Allocator, error) { return newHeap(offheap.Options{MagazineDepth: -1}) },
	})
}
