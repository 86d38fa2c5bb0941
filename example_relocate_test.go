//go:build !offheapchecked

// Checked mode moves every block through its own allocator, which finds
// stale uses and compacts nothing, so this example's output holds only for
// fast mode.

package offheap_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/offheap/offheap"
)

// relocCache is the cache of docs/storing-values.md: values behind a
// map[uint64]Ref, under one lock, with an incremental defragmentation pass.
type relocCache struct {
	mu    sync.Mutex
	h     *offheap.Heap
	index map[uint64]offheap.Ref
	todo  []uint64 // keys the pass has yet to visit
	vals  [][]byte // the pass's batch, kept from call to call
}

// defrag offers up to n values to RelocateAll, under the cache's lock, and
// reports whether the pass is over. A pass begins with a Trim, so that the
// blocks freed into magazines count as free, and a list of the keys.
func (c *relocCache) defrag(n int) (done bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.todo == nil {
		c.h.Trim()
		c.todo = make([]uint64, 0, len(c.index))
		for k := range c.index {
			c.todo = append(c.todo, k)
		}
	}
	keys := c.todo[max(0, len(c.todo)-n):]
	c.todo = c.todo[:len(c.todo)-len(keys)]
	vals := c.vals[:0]
	for _, k := range keys {
		var b []byte // nil, skipped, for a key deleted since the pass began
		if r, ok := c.index[k]; ok {
			b = c.h.Bytes(r)
		}
		vals = append(vals, b)
	}
	if c.h.RelocateAll(vals) > 0 {
		for i, k := range keys {
			if vals[i] != nil {
				c.index[k] = c.h.Ref(vals[i]) // the Ref it had, if it stayed
			}
		}
	}
	clear(vals) // no slice of the heap's kept past the call
	c.vals = vals
	if len(c.todo) > 0 {
		return false
	}
	c.todo = nil
	return true
}

// After an eviction at random, every span keeps a few values and the heap
// holds ten times its live bytes; an incremental pass, a batch of a
// thousand values per call, moves the survivors together and the emptied
// spans go back.
func ExampleHeap_RelocateAll() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer h.Close()
	c := &relocCache{h: h, index: make(map[uint64]offheap.Ref)}
	r := rand.New(rand.NewPCG(1, 2))
	for k := range uint64(200_000) {
		b := h.Alloc(16 + r.IntN(497))
		binary.LittleEndian.PutUint64(b, k)
		c.index[k] = h.Ref(b)
	}
	for k, ref := range c.index {
		if r.IntN(10) != 0 {
			h.FreeRef(ref)
			delete(c.index, k)
		}
	}
	h.Trim()
	before := h.Stats()
	fmt.Println("worth a pass:", before.SpanFreeBytes > before.InUseBytes)

	calls := 1
	for !c.defrag(1000) {
		calls++
	}
	h.Trim()
	after := h.Stats()
	fmt.Println("calls:", calls)
	fmt.Println("mapped at most a third of before:", after.MappedBytes*3 < before.MappedBytes)
	fmt.Println("most survivors moved:", after.Relocations > uint64(len(c.index))/2)
	intact := true
	for k, ref := range c.index {
		intact = intact && binary.LittleEndian.Uint64(h.Bytes(ref)) == k
		h.FreeRef(ref)
	}
	fmt.Println("values intact:", intact)
	// Output:
	// worth a pass: true
	// calls: 21
	// mapped at most a third of before: true
	// most survivors moved: true
	// values intact: true
}

// A pass one value at a time: each survivor of a span mostly freed moves
// into a fuller span of its size, and the emptied spans go back.
func ExampleHeap_Relocate() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer h.Close()
	all := make([][]byte, 100_000)
	for i := range all {
		all[i] = h.Alloc(100)
		binary.LittleEndian.PutUint64(all[i], uint64(i))
	}
	r := rand.New(rand.NewPCG(3, 4))
	var vals [][]byte
	for _, b := range all {
		if r.IntN(10) == 0 { // an eviction at random keeps one in ten
			vals = append(vals, b)
		} else {
			h.Free(b)
		}
	}
	h.Trim()
	before := h.Stats()
	moved := 0
	for i, b := range vals {
		var ok bool
		if vals[i], ok = h.Relocate(b); ok {
			moved++
		}
	}
	h.Trim()
	after := h.Stats()
	fmt.Println("most moved:", moved > len(vals)/2)
	fmt.Println("mapped at most a third of before:", after.MappedBytes*3 < before.MappedBytes)
	intact := true
	for i, b := range vals {
		intact = intact && (i == 0 || binary.LittleEndian.Uint64(b) > binary.LittleEndian.Uint64(vals[i-1]))
		h.Free(b)
	}
	fmt.Println("values intact:", intact)
	// Output:
	// most moved: true
	// mapped at most a third of before: true
	// values intact: true
}
