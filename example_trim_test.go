package offheap_test

import (
	"fmt"
	"time"

	"github.com/offheap/offheap"
)

// Trim gives back to the operating system the memory a burst of
// allocations left behind, without waiting for ReleaseDelay.
func ExampleHeap_Trim() {
	h, _ := offheap.NewHeap(offheap.Options{ReleaseDelay: time.Hour}) // not on its own, here
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	var burst [][]byte
	for range 10_000 {
		burst = append(burst, h.Alloc(1000))
	}
	for _, b := range burst {
		h.Free(b)
	}
	before := h.Stats()
	h.Trim()
	after := h.Stats()
	fmt.Println("in use:", after.InUseBytes)
	fmt.Println("mapped before Trim above 9 MiB:", before.MappedBytes > 9<<20)
	fmt.Println("mapped after Trim below 1 MiB:", after.MappedBytes < 1<<20)
	// Output:
	// in use: 0
	// mapped before Trim above 9 MiB: true
	// mapped after Trim below 1 MiB: true
}
