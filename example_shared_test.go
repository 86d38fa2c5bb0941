package offheap_test

import (
	"fmt"

	"github.com/offheap/offheap"
)

// ExampleShared shares one off-heap buffer between two owners. The memory is
// freed, after OnLastRelease, when the last reference is released.
func ExampleShared() {
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

	s := h.NewShared(5, offheap.OnLastRelease(func(b []byte) {
		fmt.Printf("released %q\n", b)
	}))
	copy(s.Bytes(), "hello")

	other := s.Retain() // a second reference, e.g. for a cache entry
	fmt.Println("refs:", s.Refs())
	s.Release()
	fmt.Println("refs:", other.Refs(), string(other.Bytes()))
	other.Release() // the last one: OnLastRelease runs, then the memory is freed

	// A static handle is immortal: Retain and Release never write.
	lit := offheap.StaticShared([]byte("constant"))
	lit.Retain().Release()
	fmt.Println(string(lit.Bytes()))

	// Output:
	// refs: 2
	// refs: 1 hello
	// released "hello"
	// constant
}
