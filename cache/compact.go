package cache

// Compaction: the cache moves its own entries out of sparse spans, so that
// after deletes, evictions and values changing size its heap gives pages
// back instead of keeping every span a few survivors pin.
//
// The rule. Every removal of an entry (Delete, eviction, expiry, a Set that
// replaced a value with one of another size) is counted; once the count since
// the last check reaches an eighth of the entries at that check (at least
// 1024), the next call checks the heap (Heap.Stats): if the free bytes its
// spans hold exceed an eighth of the bytes in use, a pass begins. A pass
// visits every shard in turn; each Set and Delete (found or not) that finds a pass under way
// (and no other call running one) does one step of it: up to stepEntries
// entries of one shard, handed to Heap.RelocateAll under the shard's lock,
// their slots updated to the new addresses. So a call's extra work is bounded
// by one step; a pass over n entries takes n/stepEntries calls. Before and
// after a pass the cache's own heap is trimmed, so that the blocks freed in
// the per-P stocks count as free for the spans and the emptied spans go back
// to the operating system. Trim stops the world briefly, so it runs only at
// a pass's ends, never at a check: a cache whose evictions make room for
// entries of the same sizes leaves no span sparse and never pays it.
//
// The bound. The same check adjusts the shards' budget (fitBudget) when
// the cache owns its heap: the heap's footprint, slack included, is held
// under MaxBytes by evicting more where the slack grows, down to three
// quarters of the nominal budget (where an entry of MaxEntryBytes still
// fits a shard).

import (
	"sync"
	"unsafe"

	"github.com/offheap/offheap"
	"sync/atomic"
)

const (
	stepEntries  = 256
	minCheckGap  = 1024
	sparseFactor = 8 // a pass runs when free span bytes exceed in-use bytes / sparseFactor
)

// compactor holds the state of compaction. Its mutex orders the checks and
// the steps of a pass; a call that finds it held skips its step.
type compactor struct {
	removed   atomic.Int64 // removals since the last check
	threshold atomic.Int64 // removals that trigger the next check
	active    atomic.Bool  // a pass is under way
	mu        sync.Mutex
	// Guarded by mu.
	shard  int      // the shard the pass is in
	batch  [][]byte // the blocks of a step
	slots  []uint64 // their slot numbers
	passes uint64   // passes begun
	moved  uint64   // entries moved
}

// removed counts n removals and, past the threshold, checks whether to
// start a pass.
func (c *Cache) removed(n int) {
	p := &c.compactor
	if p.removed.Add(int64(n)) < max(p.threshold.Load(), minCheckGap) {
		return
	}
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if c.closed.Load() || p.removed.Load() < max(p.threshold.Load(), minCheckGap) {
		return
	}
	p.removed.Store(0)
	p.threshold.Store(int64(c.Len() / 8))
	if p.active.Load() {
		return
	}
	st := c.heap.Stats()
	if c.own {
		c.fitBudget(st)
	}
	if st.SpanFreeBytes*sparseFactor > st.InUseBytes {
		if c.own {
			c.heap.Trim() // the blocks freed into magazines go back to their spans
		}
		p.shard = 0
		p.passes++
		p.active.Store(true)
	}
}

// fixedReserve is the heap's footprint that does not grow with the cache:
// for each size class in use, a partly used span and the empty spans it keeps
// for reuse, and the per-P stocks. fitBudget allows it beyond MaxBytes, so
// that a small cache is not squeezed by a reserve it cannot shed.
const fixedReserve = 256 << 10

// fitBudget adjusts the shards' budget so that the heap's footprint (its
// blocks in use, and the free blocks its spans and stocks hold) stays within
// MaxBytes: when the footprint passes 31/32 of MaxBytes (plus fixedReserve), the budget shrinks
// by the excess (and evictions follow at the next Sets); when it is below,
// the budget grows back toward shardBudget by half the room. It stays
// between 3/4 of shardBudget and shardBudget.
func (c *Cache) fitBudget(st offheap.Stats) {
	foot := int64(st.InUseBytes + st.SpanFreeBytes + st.MagazineBytes + st.DepotBytes + st.LocalBytes)
	target := c.maxBytes - c.maxBytes/32 + fixedReserve
	b := c.budget.Load()
	n := int64(len(c.shards))
	switch {
	case foot > target:
		b -= (foot - target + n - 1) / n
	default:
		b += (target - foot) / n / 2
	}
	c.budget.Store(min(max(b, c.shardBudget*3/4), c.shardBudget))
}

// compactStep does one step of a pass under way, if no other call is.
func (c *Cache) compactStep() {
	p := &c.compactor
	if !p.active.Load() || !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if c.closed.Load() || !p.active.Load() {
		return
	}
	s := &c.shards[p.shard]
	s.mu.Lock()
	done := s.closed || c.compactShard(s)
	s.mu.Unlock()
	if done {
		p.shard++
		if p.shard == len(c.shards) {
			p.active.Store(false)
			if c.own {
				c.heap.Trim()
			}
		}
	}
}

// compactIndex relocates s's table and probation ring, the first step of a
// pass over s.
func (c *Cache) compactIndex(s *shard) {
	bs := [][]byte{
		unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s.index.slots))), len(s.index.slots)*8),
		unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s.queue.ring))), len(s.queue.ring)*4),
	}
	if c.heap.RelocateAll(bs) == 0 {
		return
	}
	s.index.slots = unsafe.Slice((*uint64)(ptr(addrOf(bs[0]))), len(s.index.slots))
	if s.queue.ring != nil {
		s.queue.ring = unsafe.Slice((*uint32)(ptr(addrOf(bs[1]))), len(s.queue.ring))
	}
}

// compactShard relocates up to stepEntries entries of s from its pass
// cursor on and reports whether the cursor reached the end of the table.
func (c *Cache) compactShard(s *shard) bool {
	p := &c.compactor
	p.batch, p.slots = p.batch[:0], p.slots[:0]
	t := &s.index
	i := s.compact
	if i == 0 {
		c.compactIndex(s)
	}
	for ; i < uint64(len(t.slots)) && len(p.batch) < stepEntries; i++ {
		if v := t.slots[i]; slotLive(v) {
			p.batch = append(p.batch, slotEntry(v).block())
			p.slots = append(p.slots, i)
		}
	}
	s.compact = i
	if n := c.heap.RelocateAll(p.batch); n > 0 {
		p.moved += uint64(n)
		for j, b := range p.batch {
			k := p.slots[j]
			t.slots[k] = t.slots[k]&^addrMask | addrField(addrOf(b))
		}
	}
	for j := range p.batch {
		p.batch[j] = nil
	}
	if i >= uint64(len(t.slots)) {
		s.compact = 0
		return true
	}
	return false
}
