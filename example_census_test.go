package offheap_test

import (
	"fmt"

	"github.com/offheap/offheap"
)

// A cache bounds itself by the heap's live bytes, read at every insert:
// InUse takes no lock and allocates nothing, so the cache keeps no counter
// of its own on the allocation path.
func ExampleHeap_InUse() {
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

	const budget = 1 << 20
	var entries [][]byte
	for {
		// An entry takes 4096 bytes (its size class), or a page of 8192
		// if the heap's profile samples it.
		if bytes, _ := h.InUse(); bytes+8192 > budget {
			break // full: a real cache would evict
		}
		entries = append(entries, h.Alloc(4000))
	}
	bytes, blocks := h.InUse()
	fmt.Println("within budget:", bytes <= budget, "near it:", bytes > budget-8192)
	fmt.Println("one block per entry:", blocks == uint64(len(entries)))
	for _, e := range entries {
		h.Free(e)
	}
	// Output:
	// within budget: true near it: true
	// one block per entry: true
}
