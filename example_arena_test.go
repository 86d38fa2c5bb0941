package offheap_test

import (
	"fmt"
	"sync"

	"github.com/offheap/offheap"
)

// An arena serves one batch of work: goroutines allocate from it at once,
// and one Reset frees the whole batch for the next one.
func ExampleArena() {
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

	a := h.NewArena()
	defer a.Release() // gives every chunk back to the heap

	type point struct{ X, Y int64 }
	for batch := range 2 {
		var wg sync.WaitGroup
		sums := make([]int64, 4)
		for w := range sums {
			wg.Go(func() {
				pts := offheap.MakeSlice[point](a, 100) // zeroed, no GC work
				for i := range pts {
					pts[i] = point{int64(i), int64(w)}
				}
				label := a.Alloc(16)
				copy(label, "worker")
				for _, p := range pts {
					sums[w] += p.X + p.Y
				}
			})
		}
		wg.Wait()
		fmt.Println("batch", batch, "sums", sums, "bytes", a.Stats().AllocBytes)
		a.Reset() // forget the batch; the chunks stay for the next one
	}
	// Output:
	// batch 0 sums [4950 5050 5150 5250] bytes 6464
	// batch 1 sums [4950 5050 5150 5250] bytes 6464
}

// PeakAllocBytes remembers the largest round an arena served, across
// Resets: the size to give NewArenaSize, or to budget for.
func ExampleArenaStats() {
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
	a := h.NewArena()
	defer a.Release()

	for _, requests := range []int{300, 100, 200} {
		for range requests {
			a.Alloc(64)
		}
		a.Reset()
	}
	s := a.Stats()
	fmt.Println("bytes now:", s.AllocBytes, "peak:", s.PeakAllocBytes)
	// Output: bytes now: 0 peak: 19200
}

// AllocUnzeroed suits a buffer that is written in full before it is read,
// such as a copy of a request's body: above 512 bytes it skips the
// clearing Alloc does.
func ExampleArena_AllocUnzeroed() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer h.Close()
	a := h.NewArena()
	defer a.Release()

	body := []byte("a request body, copied into the arena for the rest of the request")
	buf := a.AllocUnzeroed(4096)
	n := copy(buf, body) // every byte the program reads is one it wrote
	fmt.Println(string(buf[:n]) == string(body), len(buf))
	// Output:
	// true 4096
}
