package offheap

import (
	"errors"
	"sync"

	"github.com/offheap/offheap/internal/pageheap"
)

// Under a Limit, the free memory a heap keeps for reuse counts against it:
// blocks in magazines and depots, the free blocks of partly used spans, the
// empty spans a class keeps, dirty free pages. An allocation the limit
// refuses gets that memory back first, as Trim does, and is tried once more,
// so that ErrLimit means the live blocks leave no room (the live blocks, and
// the free blocks that share spans with them).
//
// A reclaim stops the world (Trim's quiesce) and visits every class, so its
// cost is bounded: a refused allocation reclaims only when a reclaim could
// help, that is when the live bytes leave room for the request (Stats, a
// census without stopping anything) and something was freed since the last
// reclaim that did not help. A heap that is full and stays full pays one
// fruitless reclaim, then only a census per refused allocation.
//
// Lock order: the reclaim runs with no heap lock held and unpinned (allocSlow
// calls it before it retries); it takes reclaimState.mu, then what Trim and
// Stats take.

// reclaimState is what a heap remembers of its last reclaim.
type reclaimState struct {
	mu        sync.Mutex
	fruitless bool   // the retry after the last reclaim was refused too
	frees     uint64 // Stats.Frees at the last reclaim
}

// reclaimTry is one allocation's use of the reclaim: at most one.
type reclaimTry struct {
	done  bool
	frees uint64 // Stats.Frees at this allocation's reclaim
}

// again is called when an allocation of n bytes failed with err; it reports
// true when the allocation should be tried again: err is the limit's
// refusal, and a reclaim of the heap's free memory may make room. An err
// it does not retry names the request (requested).
func (t *reclaimTry) again(h *Heap, n int, err error) bool {
	if !errors.Is(pageheap.Requested(err, n), ErrLimit) {
		return false
	}
	rs := &h.reclaim
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if t.done {
		// The retry was refused too: the next reclaim waits for a Free.
		rs.fruitless, rs.frees = true, t.frees
		return false
	}
	t.done = true
	s := h.Stats()
	need := (uint64(n) + pageSize - 1) &^ (pageSize - 1) // at least: n's pages
	if lim := uint64(h.opts.Limit); s.InUseBytes+need > lim {
		return false // the live blocks alone leave no room
	}
	if rs.fruitless && s.Frees == rs.frees {
		return false // nothing freed since a reclaim that did not help
	}
	h.Trim()
	rs.fruitless, rs.frees = false, s.Frees
	t.frees = s.Frees
	return true
}
