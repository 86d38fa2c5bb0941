package arms

import (
	"sync"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "offheap-cache",
		Doc:     "offheap with a Cache (Heap.NewCache) per worker: no pin, no atomic; a worker frees any block through its own Cache",
		Default: true,
		New: func() (bench.Allocator, error) {
			a, err := newHeap(offheap.Options{})
			if err != nil {
				return nil, err
			}
			return &cacheArm{Heap: a.(*offheap.Heap)}, nil
		},
	})
}

// cacheArm is a heap whose workers each allocate and free through a Cache
// of their own (bench.PerWorker). Worker i gets the same Cache in every
// trial: the trials of a run follow one another, and a worker index is one
// goroutine at a time within a trial, so each Cache has one user at a time,
// as a Cache requires. Calls on the arm itself go to the heap.
type cacheArm struct {
	*offheap.Heap
	mu     sync.Mutex
	caches map[int]*offheap.Cache
}

func (c *cacheArm) Worker(i int) bench.Allocator {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caches == nil {
		c.caches = map[int]*offheap.Cache{}
	}
	k, ok := c.caches[i]
	if !ok {
		k = c.NewCache()
		c.caches[i] = k
	}
	return k
}

// Trim flushes every worker's Cache, then trims the heap, so that a memory
// reading (bench.Resident) finds the Caches' free blocks given back as
// the heap's Trim finds its magazines'. The probe calls it between a
// shape's phases, when no worker is using its Cache.
func (c *cacheArm) Trim() {
	c.mu.Lock()
	for _, k := range c.caches {
		k.Flush()
	}
	c.mu.Unlock()
	c.Heap.Trim()
}

// Close closes every worker's Cache, then the heap.
func (c *cacheArm) Close() error {
	c.mu.Lock()
	for _, k := range c.caches {
		k.Close()
	}
	c.caches = nil
	c.mu.Unlock()
	return c.Heap.Close()
}
