package arms

import (
	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// The heap at other magazine depths than the default, for the measurements
// that chose it (see offheap.DefaultMagazineDepth).
func init() {
	bench.RegisterArm(bench.Arm{
		Name: "offheap-depth1",
		Doc:  "offheap with MagazineDepth 1: wins pairs, loses to no magazines once 3 blocks per class are live (run it on live-k)",
		New:  func() (bench.Allocator, error) { return newHeap(offheap.Options{MagazineDepth: 1}) },
	})
	bench.RegisterArm(bench.Arm{
		Name: "offheap-depth64",
		Doc:  "offheap with MagazineDepth 64, half the default: the same on every shape but prodcons, where blocks cross Ps in half-magazine batches",
		New:  func() (bench.Allocator, error) { return newHeap(offheap.Options{MagazineDepth: 64}) },
	})
	bench.RegisterArm(bench.Arm{
		Name: "offheap-depth256",
		Doc:  "offheap with MagazineDepth 256, the most: faster than the default only on prodcons, for more bytes held per P",
		New:  func() (bench.Allocator, error) { return newHeap(offheap.Options{MagazineDepth: 256}) },
	})
}
