package arms

import (
	"sync"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "offheap-local",
		Doc:     "offheap with a Local (Heap.NewLocal) per worker: no pin, no atomic; a worker frees any block through its own Local",
		Default: true,
		New: func() (bench.Allocator, error) {
			a, err := newHeap(offheap.Options{})
			if err != nil {
				return nil, err
			}
			return &localArm{Heap: a.(*offheap.Heap)}, nil
		},
	})
}

// localArm is a heap whose workers each allocate and free through a Local
// of their own (bench.PerWorker). Worker i gets the same Local in every
// trial: the trials of a run follow one another, and a worker index is one
// goroutine at a time within a trial, so each Local has one user at a time,
// as a Local requires. Calls on the arm itself go to the heap.
type localArm struct {
	*offheap.Heap
	mu     sync.Mutex
	caches map[int]*offheap.Local
}

func (c *localArm) Worker(i int) bench.Allocator {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caches == nil {
		c.caches = map[int]*offheap.Local{}
	}
	k, ok := c.caches[i]
	if !ok {
		k = c.NewLocal()
		c.caches[i] = k
	}
	return k
}

// Trim flushes every worker's Local, then trims the heap, so that a memory
// reading (bench.Resident) finds the Locals' free blocks given back as
// the heap's Trim finds its magazines'. The probe calls it between a
// shape's phases, when no worker is using its Local.
func (c *localArm) Trim() {
	c.mu.Lock()
	for _, k := range c.caches {
		k.Flush()
	}
	c.mu.Unlock()
	c.Heap.Trim()
}

// Close closes every worker's Local, then the heap.
func (c *localArm) Close() error {
	c.mu.Lock()
	for _, k := range c.caches {
		k.Close()
	}
	c.caches = nil
	c.mu.Unlock()
	return c.Heap.Close()
}
