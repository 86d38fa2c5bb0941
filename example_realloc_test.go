package offheap_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/offheap/offheap"
)

// Realloc grows a buffer as append would, but off the Go heap: append on
// an off-heap slice that is full would copy it into a new Go-heap array
// behind the program's back.
func ExampleHeap_Realloc() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.Alloc(5)
	copy(buf, "hello")
	buf = h.Realloc(buf, 11) // buf's old value must not be used any more
	copy(buf[5:], " world")
	fmt.Printf("%s\n", buf)
	h.Free(buf)
	// Output:
	// hello world
}

// ReallocUnzeroed grows a buffer whose new bytes the program writes at
// once, as a reader filling it does: the bytes past the old ones are not
// zeroed first, as AllocUnzeroed's are not.
func ExampleHeap_ReallocUnzeroed() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	r := strings.NewReader("a line longer than the first buffer")
	buf := h.AllocUnzeroed(8)
	n := 0
	for {
		if n == len(buf) {
			buf = h.ReallocUnzeroed(buf, 2*len(buf)) // buf[n:] is written before it is read
		}
		k, err := r.Read(buf[n:])
		n += k
		if err == io.EOF {
			break
		}
	}
	fmt.Printf("%s (%d bytes in a block of %d)\n", buf[:n], n, len(buf))
	h.Free(buf)
	// Output:
	// a line longer than the first buffer (35 bytes in a block of 64)
}

// ReallocSlice grows a MakeSlice result, keeping its elements and zeroing
// the new ones.
func ExampleReallocSlice() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	type point struct{ X, Y float64 }
	pts := offheap.MakeSlice[point](h, 2)
	pts[0], pts[1] = point{1, 2}, point{3, 4}
	pts = offheap.ReallocSlice(h, pts, 3) // pts's old value must not be used any more
	fmt.Println(pts)
	offheap.FreeSlice(h, pts)
	fmt.Println("live blocks:", h.Stats().LiveBlocks)
	// Output:
	// [{1 2} {3 4} {0 0}]
	// live blocks: 0
}
