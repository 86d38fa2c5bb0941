package offheap_test

import (
	"errors"
	"fmt"
	"sync"

	"github.com/offheap/offheap"
)

// A pool of workers, each with a Local of its own: the workers allocate
// and free without pinning, and any worker may free a block another
// allocated (here, the blocks a worker hands to the next).
func ExampleHeap_NewLocal() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer h.Close()

	jobs := make(chan int)
	handoff := make(chan []byte, 100)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c := h.NewLocal() // one per worker: a Local is for one goroutine at a time
			defer c.Close()   // hands what it holds back to the heap
			for n := range jobs {
				scratch := c.AllocUnzeroed(n) // written in full before it is read
				for i := range scratch {
					scratch[i] = byte(i)
				}
				c.Free(scratch)
				out := c.Alloc(64)
				out[0] = byte(n)
				select {
				case handoff <- out:
				case b := <-handoff:
					c.Free(b) // another worker's block
					c.Free(out)
				}
			}
		})
	}
	for n := range 1000 {
		jobs <- 16 + n%2000
	}
	close(jobs)
	wg.Wait()
	close(handoff)
	for b := range handoff {
		h.Free(b)
	}
	s := h.Stats()
	fmt.Println("live blocks:", s.LiveBlocks)
	fmt.Println("every Alloc counted once:", s.MagazineHits+s.LocalHits+s.CentralHits+s.Fresh+s.Large == s.Allocs)
	// Output:
	// live blocks: 0
	// every Alloc counted once: true
}

// TryAlloc lets a Local's owner shed work at the heap's Limit instead of
// panicking: here a worker buffers messages until the heap is full.
func ExampleLocal_TryAlloc() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 1 << 20})
	defer h.Close()
	c := h.NewLocal()
	defer c.Close()

	var kept [][]byte
	dropped := 0
	for range 2000 {
		b, err := c.TryAlloc(1024)
		if errors.Is(err, offheap.ErrLimit) {
			dropped++ // the heap is full: drop the message, or apply back-pressure
			continue
		}
		kept = append(kept, b)
	}
	fmt.Println(len(kept) > 0, dropped > 0)
	for _, b := range kept {
		c.Free(b)
	}
	// Output:
	// true true
}

// TryNewLocal reports a closed heap where NewLocal would panic.
func ExampleHeap_TryNewLocal() {
	h, _ := offheap.NewHeap(offheap.Options{})
	l, err := h.TryNewLocal()
	fmt.Println(err)
	l.Close()
	h.Close()
	_, err = h.TryNewLocal()
	fmt.Println(errors.Is(err, offheap.ErrClosed))
	// Output:
	// <nil>
	// true
}
