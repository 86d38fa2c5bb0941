package offheap_test

import (
	"fmt"
	"runtime/debug"

	"github.com/offheap/offheap"
)

// A program that may use 1 GiB in all (a container's limit, say) holds a
// 256 MiB cache off-heap: the Go runtime's memory limit leaves room for it,
// and follows the heap as the cache grows and shrinks.
func ExampleLimitGoMemory() {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()
	before := debug.SetMemoryLimit(-1)

	cache := h.Alloc(256 << 20)
	stop := offheap.LimitGoMemory(1<<30, h)
	limit := debug.SetMemoryLimit(-1)
	fmt.Printf("the Go heap may use %d MiB\n", (limit+1<<19)>>20) // rounded: a checked heap maps a page more
	stop()
	fmt.Println("stop restores the limit:", debug.SetMemoryLimit(-1) == before)
	h.Free(cache)
	// Output:
	// the Go heap may use 768 MiB
	// stop restores the limit: true
}
