package arms

import (
	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "offheap-checked",
		Doc:  "offheap with Options{Checked: true}: every op verified, stacks recorded (slow; not in the default list)",
		New:  func() (bench.Allocator, error) { return newHeap(offheap.Options{Checked: true}) },
	})
}
