package offheap

import (
	"slices"
	"sync"

	"github.com/offheap/offheap/internal/openheaps"
)

// What internal/openheaps shows of this process's heaps to offheaptest: the
// registry of checked and sampled heaps, which ForeignFree searches too, and
// the default heap.

// The registry of checked heaps, for ForeignFree and for offheaptest
// (openheaps.Checked).
var registry struct {
	mu    sync.Mutex
	heaps []*checker
}

func init() {
	openheaps.Checked = func() []openheaps.Heap {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		hs := make([]openheaps.Heap, len(registry.heaps))
		for i, c := range registry.heaps {
			hs[i] = openheaps.Heap{Heap: c.h, Sampled: !c.all}
		}
		return hs
	}
	openheaps.Default = func() any {
		if h := defaultHeap.h.Load(); h != nil {
			return h
		}
		return nil
	}
}

func register(c *checker) {
	registry.mu.Lock()
	registry.heaps = append(registry.heaps, c)
	registry.mu.Unlock()
}

func unregister(c *checker) {
	registry.mu.Lock()
	if i := slices.Index(registry.heaps, c); i >= 0 {
		registry.heaps = slices.Delete(registry.heaps, i, i+1)
	}
	registry.mu.Unlock()
}
