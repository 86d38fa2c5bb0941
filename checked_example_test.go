package offheap_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/offheap/offheap"
)

// A double free in a checked heap panics with a *MemoryError that names the
// kind and carries the stacks of the block's Alloc and first Free.
func ExampleMemoryError() {
	h, err := offheap.NewHeap(offheap.Options{Checked: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	b := h.Alloc(64)
	h.Free(b)
	func() {
		defer func() {
			var me *offheap.MemoryError
			if err, ok := recover().(error); ok && errors.As(err, &me) {
				fmt.Println("kind:", me.Kind)
				fmt.Println("size:", me.Size)
				fmt.Println("allocated here:", strings.Contains(me.AllocStack, "ExampleMemoryError"))
				fmt.Println("freed here:", strings.Contains(me.FreeStack, "ExampleMemoryError"))
			}
		}()
		h.Free(b) // the bug: b was already freed
	}()
	// Output:
	// kind: double free
	// size: 64
	// allocated here: true
	// freed here: true
}

// Close of a checked heap lists the blocks still live, with the stacks that
// allocated them.
func ExampleLeakError() {
	h, err := offheap.NewHeap(offheap.Options{Checked: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = h.Alloc(100) // never freed
	var le *offheap.LeakError
	if err := h.Close(); errors.As(err, &le) {
		for _, l := range le.Leaks {
			fmt.Println(l.Size, "bytes, allocated here:", strings.Contains(l.Stack, "ExampleLeakError"))
		}
	}
	// Output:
	// 100 bytes, allocated here: true
}
