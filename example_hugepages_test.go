package offheap_test

import (
	"fmt"

	"github.com/offheap/offheap"
)

// A heap with HugePages: a large table is on huge pages when Alloc
// returns, before the program writes it; HugePageBytes says how much of the
// heap is on them. (No output is checked: it depends on the kernel, Linux
// 6.1 or later, and on the memory the system has free in 2 MiB pieces.)
func ExampleOptions_hugePages() {
	h, err := offheap.NewHeap(offheap.Options{HugePages: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	table := h.Alloc(64 << 20)
	huge, err := h.HugePageBytes()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d of %d MiB on huge pages\n", huge>>20, len(table)>>20)
	for i := range table {
		table[i] = byte(i)
	}
	h.Free(table)
}

// Realloc of a large block moves its pages, not its bytes: growing a
// 64 MiB block to 128 MiB costs page-table work and no more memory.
func ExampleHeap_Realloc_large() {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	b := h.Alloc(64 << 20)
	copy(b, "kept")
	fence := h.Alloc(1 << 20) // right after b: b cannot grow in place
	b = h.Realloc(b, 128<<20) // b's old value must not be used any more
	fmt.Println(string(b[:4]), len(b)>>20, "MiB")
	h.Free(fence)
	h.Free(b)
	// Output: kept 128 MiB
}
