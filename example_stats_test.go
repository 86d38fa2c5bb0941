//go:build !offheapchecked

// Checked mode has no magazines, so this example's output holds only for
// fast heaps.

package offheap_test

import (
	"fmt"

	"github.com/offheap/offheap"
)

func ExampleHeap_Stats() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	for range 1000 {
		h.Free(h.Alloc(100))
	}
	s := h.Stats()
	// The first Alloc refills the empty magazine from a fresh span; the
	// others are served by the magazine (a goroutine that moves to another
	// P refills that P's magazine once).
	fmt.Println("allocs", s.Allocs, "frees", s.Frees)
	fmt.Println("every Alloc counted once:", s.MagazineHits+s.LocalHits+s.CentralHits+s.Fresh+s.Large == s.Allocs)
	fmt.Println("mostly magazine hits:", s.MagazineHits >= 990)
	// Output:
	// allocs 1000 frees 1000
	// every Alloc counted once: true
	// mostly magazine hits: true
}
