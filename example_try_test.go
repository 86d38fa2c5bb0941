package offheap_test

import (
	"errors"
	"fmt"

	"github.com/offheap/offheap"
)

// TryRealloc refuses a block past the Limit without touching b, which
// stays the caller's to use or free.
func ExampleHeap_TryRealloc() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 8 << 20})
	defer h.Close()

	b := h.Alloc(100)
	copy(b, "kept")
	nb, err := h.TryRealloc(b, 64<<20)
	fmt.Println(nb == nil, errors.Is(err, offheap.ErrLimit), string(b[:4]))
	b, _ = h.TryRealloc(b, 200) // this one fits
	fmt.Println(len(b), string(b[:4]))
	h.Free(b)
	// Output:
	// true true kept
	// 200 kept
}

// A block holds at least what was asked for: the rest of its size class
// is room Realloc grows into without moving the bytes.
func ExampleHeap_UsableSize() {
	h, _ := offheap.NewHeap(offheap.Options{ProfileBytes: -1})
	defer h.Close()

	b := h.Alloc(100)
	u := h.UsableSize(b)
	nb := h.Realloc(b, u)
	fmt.Println(u >= 100, len(nb) == u) // nb is b, in place, outside checked mode
	h.Free(nb)
	// Output:
	// true true
}

// FreeRef frees what a Ref names; the zero Ref, what a map lookup of a
// missing key returns, is ignored.
func ExampleHeap_FreeRef() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer h.Close()

	index := map[string]offheap.Ref{"a": h.Ref(h.Alloc(10))}
	h.FreeRef(index["a"])
	h.FreeRef(index["missing"])
	delete(index, "a")
	fmt.Println(h.Stats().InUseBytes)
	// Output:
	// 0
}

// TryMakeSlice returns the error MakeSlice would panic with.
func ExampleTryMakeSlice() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 8 << 20})
	defer h.Close()

	_, err := offheap.TryMakeSlice[int64](h, 4<<20) // 32 MiB
	fmt.Println(errors.Is(err, offheap.ErrLimit))
	s, err := offheap.TryMakeSlice[int64](h, 1000)
	fmt.Println(len(s), err)
	offheap.FreeSlice(h, s)
	// Output:
	// true
	// 1000 <nil>
}

// TryNewShared refuses a handle the Limit has no room for.
func ExampleHeap_TryNewShared() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 8 << 20})
	defer h.Close()

	_, err := h.TryNewShared(64 << 20)
	fmt.Println(errors.Is(err, offheap.ErrLimit))
	s, _ := h.TryNewShared(16)
	fmt.Println(len(s.Bytes()), s.Refs())
	s.Release()
	// Output:
	// true
	// 16 1
}

// TryNewBuffer refuses a Buffer the Limit has no room for, and returns
// the error instead of panicking.
func ExampleHeap_TryNewBuffer() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 8 << 20})
	defer h.Close()

	_, err := h.TryNewBuffer(64 << 20)
	fmt.Println(errors.Is(err, offheap.ErrLimit))
	buf, err := h.TryNewBuffer(256)
	fmt.Println(buf.Cap() >= 256, err)
	buf.Free()
	// Output:
	// true
	// true <nil>
}

// TryMakeSliceUnzeroed is MakeSliceUnzeroed that returns the error: fill
// every element before reading it.
func ExampleTryMakeSliceUnzeroed() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 8 << 20})
	defer h.Close()

	_, err := offheap.TryMakeSliceUnzeroed[float64](h, 4<<20) // 32 MiB
	fmt.Println(errors.Is(err, offheap.ErrLimit))
	s, err := offheap.TryMakeSliceUnzeroed[float64](h, 4)
	for i := range s {
		s[i] = float64(i) / 2
	}
	fmt.Println(s, err)
	offheap.FreeSlice(h, s)
	// Output:
	// true
	// [0 0.5 1 1.5] <nil>
}
