package cache

// Probation: a new entry spends its first while in a FIFO of slot numbers,
// about a tenth of the shard's entries long, as in S3-FIFO's small queue.
// When the queue holds more than a tenth of the entries, room is made from
// its head: an entry read while on probation joins the main CLOCK (its
// probation bit cleared, its counter kept); one never read is evicted. So a
// scan's entries, read once, leave after a tenth of the shard's insertions
// and never push the main area's entries out; the main hand passes over
// probationary slots. The queue is one heap block of 4-byte slot numbers, a
// sixteenth of the table's length (about 0.4 bytes per entry), counted in
// the shard's bytes. A slot number in it may be stale (its entry deleted,
// or its slot reused): a slot without the probation bit is skipped, and a
// reused one just ends its new entry's probation early. Rebuilding the
// table renumbers the slots, so it empties the queue and clears every
// probation bit.

import (
	"unsafe"

	"github.com/offheap/offheap"
)

// probation is a ring of slot numbers.
type probation struct {
	ring       []uint32 // a heap block; nil if it could not be allocated
	head, size int
}

func (q *probation) bytes() int64 { return int64(len(q.ring)) * 4 }

// admit pushes slot i if the queue has room and returns the probation bit
// for the new entry's slot, or 0 where it goes straight to the main area.
func (q *probation) admit(i uint64) uint64 {
	if q.size == len(q.ring) {
		return 0
	}
	q.ring[(q.head+q.size)%len(q.ring)] = uint32(i)
	q.size++
	return probBit
}

// resetProbation empties s's queue, clears the probation bits and sizes
// the ring for s's table. On an allocation failure s has no queue, and every
// new entry goes to the main area.
func (c *Cache) resetProbation(s *shard) {
	for i, v := range s.index.slots {
		if v&probBit != 0 && slotLive(v) {
			s.index.slots[i] = v &^ probBit
		}
	}
	freeRing(c.heap, s.queue.ring)
	s.queue = probation{}
	n := max(len(s.index.slots)/16, 4)
	b, err := c.heap.TryAlloc(n * 4)
	if err != nil {
		return
	}
	s.queue.ring = unsafe.Slice((*uint32)(ptr(addrOf(b))), n)
}

func freeRing(h *offheap.Heap, r []uint32) {
	if r != nil {
		h.Free(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(r))), len(r)*4))
	}
}

// probationVictim pops the queue until it finds an entry to remove, while
// the queue holds more than a tenth of the entries (or at all, with force).
// Entries read on probation are promoted on the way; keep is never chosen.
func (s *shard) probationVictim(keep uint64, now int64, force bool) (i uint64, expired, ok bool) {
	q := &s.queue
	for q.size > 0 && (force || q.size*10 > s.index.live) {
		i = uint64(q.ring[q.head])
		q.head = (q.head + 1) % len(q.ring)
		q.size--
		v := s.index.slots[i]
		if !slotLive(v) || v&probBit == 0 {
			continue
		}
		if now != 0 {
			if x := slotEntry(v).expiry(); x != 0 && x <= now && i != keep {
				return i, true, true
			}
		}
		if slotFreq(v) > 0 || i == keep {
			s.index.slots[i] = v &^ probBit
			continue
		}
		return i, false, true
	}
	return 0, false, false
}
