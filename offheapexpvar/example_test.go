package offheapexpvar_test

import (
	"expvar"
	"fmt"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/offheapexpvar"
)

// A server that imports expvar serves /debug/vars; publishing the heap puts
// its Stats there.
func ExamplePublish() {
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
	offheapexpvar.Publish("cache_heap", h)

	b := h.Alloc(100)
	fmt.Println(expvar.Get("cache_heap").String()[:12])
	h.Free(b)
	// Output: {"Allocs":1,
}

// Var is for a name of your own, or a map of heaps.
func ExampleVar() {
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
	heaps := expvar.NewMap("heaps")
	heaps.Set("cache", offheapexpvar.Var(h))
	heaps.Set("default", offheapexpvar.Var(offheap.Default()))

	b := h.Alloc(100)
	fmt.Println(heaps.Get("cache").String()[:12])
	h.Free(b)
	// Output: {"Allocs":1,
}
