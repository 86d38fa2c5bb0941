package offheap

import "fmt"

// Blocks above maxSmall are runs of whole pages taken straight from the page
// heap, one page-heap lock per Alloc and per Free. Their first page's word
// holds the run's length, so Free needs no other table. Pages that come back
// released or never used are already zero, so a large Alloc zeroes only the
// pages that were dirty.

// allocLarge returns the address of a new block of n > maxSmall bytes.
func (h *Heap) allocLarge(n int, zero bool) (uintptr, error) {
	np, ok := pagesFor(n)
	if !ok {
		return 0, fmt.Errorf("%w: %d bytes is more than a heap can hold", ErrSize, n)
	}
	ph := &h.pages
	ph.mu.Lock()
	if ph.closed {
		ph.mu.Unlock()
		return 0, ErrClosed
	}
	first, dirty, err := ph.alloc(np, func(i uint32) uint64 {
		if i == 0 {
			return classLarge | uint64(np)<<32
		}
		return classLarge | 1<<8
	})
	if err == nil {
		ph.largeAllocs.Add(1)
		ph.largePages.Add(uint64(np))
	}
	ph.mu.Unlock()
	if err != nil {
		return 0, err
	}
	a := ph.addr(first)
	if zero && dirty > 0 {
		clear(bytesAt(a, n))
	}
	return a, nil
}

// freeLarge frees the large block that starts at a, or panics if a is not
// the start of one.
func (h *Heap) freeLarge(a uintptr) {
	ph := &h.pages
	ph.mu.Lock()
	off := a - ph.base
	e := *ph.entry(off >> pageShift)
	if uint8(e) != classLarge || uint32(e)>>8 != 0 || off&(pageSize-1) != 0 {
		ph.mu.Unlock()
		panic(fmt.Sprintf("offheap: Free of %#x, which is not the start of a block: it is inside a large block", a))
	}
	np := uint32(e >> 32)
	ph.release(uint32(off>>pageShift), np)
	ph.largeFrees.Add(1)
	ph.largePages.Add(-uint64(np))
	ph.mu.Unlock()
}
