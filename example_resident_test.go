//go:build !offheapchecked

// Checked mode writes every block it hands out, so nothing stays untouched.

package offheap_test

import (
	"fmt"

	"github.com/offheap/offheap"
)

// MappedBytes counts a block from its Alloc; ResidentBytes counts the pages
// the program has written.
func ExampleHeap_ResidentBytes() {
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

	b := h.Alloc(256 << 20)
	for i := 0; i < 16<<20; i += 4096 {
		b[i] = 1 // the first 16 MiB
	}
	resident, err := h.ResidentBytes()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("mapped MiB:", h.Stats().MappedBytes>>20)
	// Transparent huge pages may make more resident than was written: a
	// huge page is 2 MiB on 4 KiB kernels and 32 MiB on 16 KiB ones.
	fmt.Println("resident: at least the 16 MiB written:", resident >= 16<<20, "and far below mapped:", resident < 128<<20)
	// Output:
	// mapped MiB: 256
	// resident: at least the 16 MiB written: true and far below mapped: true
}
