package offheap_test

import (
	"fmt"

	"github.com/offheap/offheap"
)

// Realloc grows a buffer as append would, but off the Go heap: append on
// an off-heap slice that is full would copy it into a new Go-heap array
// behind the program's back.
func ExampleHeap_Realloc() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer h.Close()

	buf := h.Alloc(5)
	copy(buf, "hello")
	buf = h.Realloc(buf, 11) // buf's old value must not be used any more
	copy(buf[5:], " world")
	fmt.Printf("%s\n", buf)
	h.Free(buf)
	// Output:
	// hello world
}
