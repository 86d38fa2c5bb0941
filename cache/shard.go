package cache

// A shard is one lock, one index and the entries it points to. Every access
// to a shard's index and entries happens under its lock: a Get copies the
// value out before unlocking, a View calls its function before unlocking,
// and an entry is freed only after its slot has left the index, under the
// same lock, so no reader ever holds an entry's address once it is free.

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// shard is one lock and what it guards, padded to a multiple of a cache
// line so that two shards' locks never share one.
type shard struct {
	shardState
	_ [(64 - unsafe.Sizeof(shardState{})%64) % 64]byte
}

var _ = [1]struct{}{}[unsafe.Sizeof(shard{})%64]

type shardState struct {
	// mu is held for reading by Get, View and Has, which change nothing
	// but a slot's policy bits (atomically) and the hit and miss counts
	// (atomic), and for writing by every other call.
	mu sync.RWMutex
	// Guarded by mu.
	closed   bool
	index    table
	hand     uint64    // the eviction policy's clock hand (policy.go)
	queue    probation // the slots of entries on probation (probation.go)
	bytes    int64     // entries' blocks at class size, plus the index's block
	expiring int       // live entries with an expiry
	compact  uint64    // next slot the compaction pass visits (compact.go)
	counts   counts    // the shard's share of Stats (stats.go)
}

// removeAt takes live slot i out of the index and frees its entry.
func (c *Cache) removeAt(s *shard, i uint64) {
	e := slotEntry(s.index.slots[i])
	s.index.remove(i)
	c.release(s, e)
}

// release frees entry e, which no slot holds any more.
func (c *Cache) release(s *shard, e entry) {
	if e.expiry() != 0 {
		s.expiring--
	}
	s.bytes -= c.classSize(e.size())
	c.heap.Free(e.block())
}

// makeRoom evicts entries until the shard's bytes plus need fit its budget,
// passing over slot keep. It returns false if they cannot (the shard has
// nothing left to evict but keep).
func (c *Cache) makeRoom(s *shard, need int64, keep uint64) bool {
	var now int64
	if s.expiring > 0 {
		now = c.now()
	}
	for budget := c.budget.Load(); s.bytes+need > budget; {
		i, expired, ok := s.probationVictim(keep, now, false)
		if !ok {
			i, expired, ok = s.victim(keep, now)
		}
		if !ok {
			i, expired, ok = s.probationVictim(keep, now, true)
		}
		if !ok {
			return false
		}
		if expired {
			s.counts.expirations++
		} else {
			s.counts.evictions++
		}
		c.removeAt(s, i)
	}
	return true
}

// grow rebuilds the index before an insert that would fill it past three
// quarters, evicting first where the larger table would not fit the
// budget. It returns an error from the heap.
func (c *Cache) grow(s *shard, h uint64, k []byte) (uint64, error) {
	t := &s.index
	extra := int64(t.tableLen(t.live+1))*8 - t.bytes()
	if extra > 0 && !c.makeRoom(s, extra, ^uint64(0)) {
		return 0, ErrTooLarge
	}
	if err := c.rebuildIndex(s, 0); err != nil {
		return 0, err
	}
	i, _ := t.find(h, k)
	return i, nil
}

// rebuildIndex rebuilds the shard's table at the length its live slots, or
// n, need, keeping the bytes count true.
func (c *Cache) rebuildIndex(s *shard, n int) error {
	old := s.index.bytes() + s.queue.bytes()
	if err := s.index.rebuild(c.heap, c.hash, n); err != nil {
		return err
	}
	c.resetProbation(s)
	s.bytes += s.index.bytes() + s.queue.bytes() - old
	s.hand = 0
	s.compact = 0
	return nil
}

// lookup finds k in the shard, which is locked for reading, and marks it
// read. It returns found false for a miss, and expired true for an entry
// whose time has passed, which the caller removes with expire after
// letting go of the read lock.
func (c *Cache) lookup(s *shard, h uint64, k []byte) (e entry, found, expired bool) {
	i, found := s.index.find(h, k)
	if !found {
		s.counts.misses.Add(1)
		return 0, false, false
	}
	e = slotEntry(atomic.LoadUint64(&s.index.slots[i]))
	if x := e.expiry(); x != 0 && x <= c.now() {
		return 0, false, true
	}
	s.index.touch(i)
	s.counts.hits.Add(1)
	return e, true, false
}

// expire removes k if it has expired, and counts the miss of the read that
// found it so. s is unlocked.
func (c *Cache) expire(s *shard, h uint64, k []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.misses.Add(1)
	if s.closed {
		return
	}
	i, found := s.index.find(h, k)
	if !found {
		return
	}
	if x := slotEntry(s.index.slots[i]).expiry(); x != 0 && x <= c.now() {
		s.counts.expirations++
		c.removeAt(s, i)
		c.shrinkAfterRemove(s)
	}
}

// shrinkAfterRemove rebuilds the index smaller once deletes have left it
// sparse, so that a cache that shrinks gives its index's memory back too.
func (c *Cache) shrinkAfterRemove(s *shard) {
	if s.index.sparse() {
		_ = c.rebuildIndex(s, 0) // on failure the larger table stays, which is correct
	}
}
