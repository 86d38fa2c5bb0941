//go:build !offheapchecked

// A checked heap gives nothing back by relocation and reports no gain, so
// this example's output holds only for fast mode.

package offheap_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/offheap/offheap"
)

// The rule of docs/storing-values.md ("When to run a pass"): a pass runs when
// it would give back more than a quarter of the bytes in use, and offers
// RelocateAll only the values of the classes whose moves each free at
// least two blocks' worth of span.
func ExampleHeap_RelocateGain() {
	// Magazines off: each class fills one span at a time, so that the
	// heap, all live, has no span a pass could empty.
	h, _ := offheap.NewHeap(offheap.Options{MagazineDepth: -1})
	defer h.Close()
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([][]byte, 100_000)
	for i := range vals {
		vals[i] = h.Alloc(16 + r.IntN(497))
	}
	fmt.Printf("all live: gain %d bytes\n", h.RelocateGain().Bytes)

	var keep [][]byte // an eviction of 90% at random
	for _, b := range vals {
		if r.IntN(10) == 0 {
			keep = append(keep, b)
		} else {
			h.Free(b)
		}
	}
	h.Trim()
	g := h.RelocateGain()
	fmt.Println("worth a pass:", g.Bytes > h.Stats().InUseBytes/4)
	var offer [][]byte
	for _, b := range keep {
		for _, c := range g.Class {
			if c.Min <= len(b) && len(b) <= c.Size && c.Bytes >= 2*c.Moves*uint64(c.Size) {
				offer = append(offer, b)
				break
			}
		}
	}
	h.RelocateAll(offer) // a cache stores the slices it returns
	h.Trim()
	after := h.RelocateGain()
	fmt.Println("gain left under 5%:", after.Bytes < g.Bytes/20)
	// Output:
	// all live: gain 0 bytes
	// worth a pass: true
	// gain left under 5%: true
}
