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
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

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

// Leaks lists the blocks live now, grouped by the stack that allocated
// them, while the heap stays open: for hunting a leak in a long test.
func ExampleHeap_Leaks() {
	h, err := offheap.NewHeap(offheap.Options{Checked: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()
	var held [][]byte
	for range 6 {
		held = append(held, h.Alloc(64))
	}
	if le := h.Leaks(); le != nil {
		fmt.Println(strings.SplitN(le.Error(), "\n", 2)[0])
	}
	for _, b := range held {
		h.Free(b)
	}
	fmt.Println("after the Frees:", h.Leaks() == nil)
	// Output:
	// offheap: leak: 6 blocks (384 bytes) live, allocated at 1 place
	// after the Frees: true
}

// Groups is the leaks by allocation stack, the group with the most bytes
// first.
func ExampleLeakError_Groups() {
	h, err := offheap.NewHeap(offheap.Options{Checked: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		h.Alloc(64) // never freed
	}
	h.Alloc(1000) // never freed either
	var le *offheap.LeakError
	if err := h.Close(); errors.As(err, &le) {
		for _, g := range le.Groups() {
			fmt.Println("blocks:", len(g.Leaks), "bytes:", g.Bytes, "allocated here:", strings.Contains(g.Stack, "ExampleLeakError_Groups"))
		}
	}
	// Output:
	// blocks: 1 bytes: 1000 allocated here: true
	// blocks: 3 bytes: 192 allocated here: true
}

// MemoryErrors keeps what a checked heap found, even when the panic that
// reported it was recovered, as a server's handler might.
func ExampleHeap_MemoryErrors() {
	h, err := offheap.NewHeap(offheap.Options{Checked: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()
	b := h.Alloc(64)
	h.Free(b)
	func() {
		defer func() { _ = recover() }() // the panic swallowed
		h.Free(b)                        // the bug: b was already freed
	}()
	for _, e := range h.MemoryErrors() {
		fmt.Println(e.Kind, e.Size)
	}
	// Output:
	// double free 64
}
