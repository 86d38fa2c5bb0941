package offheap

import "fmt"

// recordSize is the length the checker's record gives the live block at
// a, or a panic as Ref's, for a b of n bytes that is no live block.
func (h *Heap) recordSize(a uintptr, n int) int {
	h.checkRecordRef(a, uint64(n), "UsableSize")
	state, size, _, _, known := h.chk.refRecord(a)
	if !known || state != stateLive { // freed meanwhile: the caller's race
		panic(fmt.Sprintf("offheap: UsableSize of %#x, which is not a live block of this heap: ask about a block before freeing it", a))
	}
	return size
}
