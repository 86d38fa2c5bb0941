package arms

import (
	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "offheap-sampled",
		Doc:  "offheap with Options{GuardOneIn: 1000}: one allocation in 1000 on guard pages (not in the default list)",
		New:  func() (bench.Allocator, error) { return newHeap(offheap.Options{GuardOneIn: 1000}) },
	})
}
