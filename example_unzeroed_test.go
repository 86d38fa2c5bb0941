package offheap_test

import (
	"fmt"

	"github.com/offheap/offheap"
)

// A slice filled at once needs no zeroing: MakeSliceUnzeroed skips it.
// Every element is written before one is read.
func ExampleMakeSliceUnzeroed() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer h.Close()

	xs := offheap.MakeSliceUnzeroed[float64](h, 1000)
	for i := range xs {
		xs[i] = float64(i) / 2
	}
	fmt.Println(len(xs), xs[999])
	offheap.FreeSlice(h, xs)
	// Output:
	// 1000 499.5
}
