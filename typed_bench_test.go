package offheap

import (
	"fmt"
	"testing"
)

// BenchmarkMakeSliceFill: a []float64 made and filled at once, then freed,
// zeroed (MakeSlice) against unzeroed (MakeSliceUnzeroed): what the zeroing
// costs a caller who overwrites every element.
func BenchmarkMakeSliceFill(b *testing.B) {
	h := newTestHeap(b, Options{})
	for _, n := range []int{64, 1 << 10, 8 << 10, 128 << 10} {
		for _, arm := range []struct {
			name string
			make func(Allocator, int) []float64
		}{{"zeroed", MakeSlice[float64]}, {"unzeroed", MakeSliceUnzeroed[float64]}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, arm.name), func(b *testing.B) {
				b.SetBytes(int64(n) * 8)
				for b.Loop() {
					s := arm.make(h, n)
					for i := range s {
						s[i] = float64(i)
					}
					FreeSlice(h, s)
				}
			})
		}
	}
}
