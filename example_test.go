package offheap_test

import (
	"errors"
	"fmt"

	"github.com/offheap/offheap"
)

func Example() {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	b := h.Alloc(64) // zeroed, len == cap == 64, invisible to the GC
	copy(b, "hello, off-heap")
	fmt.Println(string(b[:15]))
	h.Free(b) // b must not be used after this

	s := h.Stats()
	fmt.Println("allocs:", s.Allocs, "frees:", s.Frees, "in use:", s.InUseBytes)
	// Output:
	// hello, off-heap
	// allocs: 1 frees: 1 in use: 0
}

// Point is plain data: no Go pointers, so it may live off-heap.
type Point struct{ X, Y float64 }

func ExampleNew() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	p := offheap.New[Point](h)
	p.X, p.Y = 3, 4
	pts := offheap.MakeSlice[Point](h, 100)
	pts[99] = *p
	fmt.Println(pts[99], len(pts))

	offheap.FreeSlice(h, pts)
	offheap.Free(h, p)
	// Output: {3 4} 100
}

func ExampleNew_pointers() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()
	defer func() { fmt.Println(recover()) }()

	type Node struct {
		Name string // a string holds a Go pointer
	}
	offheap.New[Node](h)
	// Output: offheap: New[offheap_test.Node]: Node.Name is a string (hold its bytes in a [N]byte and a length, or keep the strings on the Go heap and store an index); the garbage collector does not see Go pointers in off-heap memory, so it could free what they point to
}

func ExampleHeap_TryAlloc() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 1 << 20})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	_, err := h.TryAlloc(4 << 20)
	fmt.Println(errors.Is(err, offheap.ErrLimit))
	// Output: true
}

// TryAllocUnzeroed refuses what the limit does not allow with an error,
// as TryAlloc does, and hands out unzeroed bytes for a caller that
// overwrites them all.
func ExampleHeap_TryAllocUnzeroed() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 1 << 20})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	b, err := h.TryAllocUnzeroed(100)
	fmt.Println(len(b), err)
	copy(b, make([]byte, 100)) // every byte written before it is read
	h.Free(b)

	_, err = h.TryAllocUnzeroed(4 << 20)
	fmt.Println(errors.Is(err, offheap.ErrLimit))
	// Output:
	// 100 <nil>
	// true
}

// Free takes what allocated the value: a value made from a Local is freed
// through it (or through its heap).
func ExampleFree() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()
	l := h.NewLocal()
	defer l.Close()

	type Point struct{ X, Y float64 }
	p := offheap.New[Point](l)
	p.X = 1.5
	fmt.Println(*p)
	offheap.Free(l, p)
	fmt.Println(h.Stats().LiveBlocks, "blocks live")
	// Output:
	// {1.5 0}
	// 0 blocks live
}
