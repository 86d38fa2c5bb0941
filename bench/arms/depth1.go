package arms

import (
	"github.com/offheap/offheap"
	"github.com/offheap/offheap/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name: "offheap-depth1",
		Doc:  "offheap with MagazineDepth 1: wins pairs, loses to no magazines once 3 blocks per class are live (run it on live-k)",
		New:  func() (bench.Allocator, error) { return newHeap(offheap.Options{MagazineDepth: 1}) },
	})
}
