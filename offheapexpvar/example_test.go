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
	defer h.Close()
	offheapexpvar.Publish("cache_heap", h)

	h.Alloc(100)
	fmt.Println(expvar.Get("cache_heap").String()[:12])
	// Output: {"Allocs":1,
}

// Var is for a name of your own, or a map of heaps.
func ExampleVar() {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	heaps := expvar.NewMap("heaps")
	heaps.Set("cache", offheapexpvar.Var(h))
	heaps.Set("default", offheapexpvar.Var(offheap.Default()))

	h.Alloc(100)
	fmt.Println(heaps.Get("cache").String()[:12])
	// Output: {"Allocs":1,
}
