package pageheap

import "unsafe"

// The span array: a struct of spanBytes per span id, off-heap beside the
// pagemap, whose layout the span layer owns. The page heap hands out the
// ids with the span's pages, so that a span's pagemap words and its struct
// are made under one lock.

// SpanSlot is the memory of span id's struct.
func (ph *Heap) SpanSlot(id uint32) unsafe.Pointer {
	return unsafe.Add(ph.Spans, uintptr(id)*SpanBytes)
}

// AllocSpan takes a span id and np pages for it: page i's pagemap word is
// word(i, id), and made runs under Mu once the words are written, with the
// id and the pages' address, to make the span's struct.
func (ph *Heap) AllocSpan(np uint32, word func(i, id uint32) uint64, made func(id uint32, start uintptr)) (uint32, error) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	if ph.closed {
		return 0, ErrClosed
	}
	id, ok := ph.newSpanID()
	if !ok {
		return 0, ph.outOfSpace(uint64(np)<<PageShift, nil)
	}
	first, _, err := ph.alloc(np, 1, func(i uint32) uint64 { return word(i, id) })
	if err != nil {
		ph.spanIDs = append(ph.spanIDs, id)
		return 0, err
	}
	made(id, ph.Addr(first))
	return id, nil
}

// FreeSpan gives span id's np pages, at start, back, and its id.
func (ph *Heap) FreeSpan(id uint32, start uintptr, np uint32) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	first, _ := ph.PageOf(start)
	ph.release(first, np)
	ph.spanIDs = append(ph.spanIDs, id)
}

// newSpanID hands out a span id. Called with Mu held.
func (ph *Heap) newSpanID() (uint32, bool) {
	if n := len(ph.spanIDs); n > 0 {
		id := ph.spanIDs[n-1]
		ph.spanIDs = ph.spanIDs[:n-1]
		return id, true
	}
	if ph.nextSpan >= ph.maxSpan {
		return 0, false
	}
	ph.nextSpan++
	return ph.nextSpan, true
}
