package cache

// A shard is one lock, one index and the logs of records it points to.
// Every change to a shard's index and records happens under its lock. A
// Get on a cache with its own heap reads without the lock and keeps what
// it read only if no writer changed the shard meanwhile (readers.go); every
// other read holds the lock: a Get copies the value out before unlocking, a
// View calls its function before unlocking. A segment or value block is
// freed only after every slot pointing into it has left the index or been
// moved, so no reader under the lock ever holds an address of freed memory.

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// shard is one lock and what it guards, padded to a multiple of a cache
// line so that two shards' locks never share one. The lock and what the
// lock-free reads load of the shard share the first line: every call that
// takes the lock to change the shard also changes seq, so a writer then
// takes one line from the reading cores, not two; the rest, which writers
// change and lock-free reads never load, is on lines of its own.
type shard struct {
	shardHead
	_ [64 - unsafe.Sizeof(shardHead{})]byte
	shardState
	_ [64 - unsafe.Sizeof(shardState{})%64]byte // never empty: a struct ending in a zero-size field grows
}

var _ = [1]struct{}{}[unsafe.Sizeof(shard{})%64]

// shardHead is the shard's lock and what a lock-free read (readers.go)
// loads of the shard.
type shardHead struct {
	// mu is held by every call but a lock-free Get or Has (lock.go). A
	// read under it changes nothing but a slot's policy bits (atomically:
	// lock-free reads set them too) and the hit and miss counts.
	mu sync.Mutex
	// seq is odd while a writer changes the shard (lock, unlock).
	seq atomic.Uint64
	// tab and segView are copies of index.slots' and segs' slice headers,
	// published when the table or segs moves.
	tab     atomic.Pointer[[]uint64]
	segView atomic.Pointer[[]segInfo]
}

type shardState struct {
	// Guarded by mu.
	closed   bool
	loading  bool // a load is storing a run: the segments it opens are populated (newSegment)
	index    table
	segs     []segInfo // by segment number
	freeIDs  []uint32  // segment numbers free for reuse
	logs     [2]segLog // the small and the main log
	ghost    ghost     // keys evicted from the small log
	bytes    int64     // segments, value blocks at class size, the index and the ghost
	live     int64     // bytes of records not dead
	expiring int       // live entries with an expiry
	removals int       // removals since the shard last reported a heap check due (countRemovals)
	counts   counts    // the shard's share of Stats
	spare    []byte    // a segment's block compactStep took ahead, for newSegment; nil between calls
}

// removeAt takes live slot i out of the index and kills its record.
func (c *Cache) removeAt(s *shard, i int) {
	c.kill(s, s.index.slots[i])
	s.index.remove(i)
}

// grow rebuilds the index before an insert that would fill it past four
// fifths, evicting first where the larger table would not fit the budget.
// A table whose live slots outgrow it is rebuilt three fifths used, not
// two thirds (see tableLen): each rebuild rehashes every live key, and a
// growing shard whose tables grew by a fifth each time would rehash its keys
// six times over; by a third, four times. Two thirds stay where the slots
// are not growing (a table full of tombstones, in a shard that evicts as
// much as it inserts) and where the table would pass a sixteenth of the
// shard's budget: there its bytes are room the entries lose. It returns an
// error from the heap.
func (c *Cache) grow(s *shard) error {
	t := &s.index
	n := t.live + 1
	if fast := n * 10 / 9; n*3/2 > len(t.slots) && int64(t.tableLen(fast))*8*16 <= c.shardBudget {
		n = fast
	}
	extra := int64(t.tableLen(n))*8 - t.bytes()
	if extra > 0 && !c.makeRoom(s, extra) {
		return ErrTooLarge
	}
	return c.rebuildIndex(s, n)
}

// publishTable publishes the shard's table for lock-free reads.
func (s *shard) publishTable() {
	p := new([]uint64)
	*p = s.index.slots
	s.tab.Store(p)
}

// publishSegs publishes the shard's segs for lock-free reads.
func (s *shard) publishSegs() {
	p := new([]segInfo)
	*p = s.segs
	s.segView.Store(p)
}

// retire frees a table a rebuild replaced, once no lock-free read can be
// reading it.
func (c *Cache) retire(slots []uint64) {
	if c.lockFree {
		c.readers.wait()
	}
	freeSlots(c.heap, slots)
}

// trimBytes is the bytes of old tables and compacted segments whose
// freeing, summed, trims the cache's own heap (at least; a 256th of
// MaxBytes in a large cache).
const trimBytes = 256 << 10

// rebuildIndex rebuilds the shard's table at the length its live slots, or
// n, need, keeping the bytes count true. The ghost is sized by the table,
// so it goes too.
func (c *Cache) rebuildIndex(s *shard, n int) error {
	old := s.index.bytes()
	retired, err := s.rebuild(c.heap, c.hash, n)
	if err != nil {
		return err
	}
	if retired != nil {
		s.publishTable()
		c.retire(retired)
	}
	s.bytes += s.index.bytes() - old
	c.freeGhost(s)
	c.freed(old)
	return nil
}

// freed counts n bytes freed by an index rebuild or a compaction, and trims
// the cache's own heap once they pass trimBytes (or a 256th of MaxBytes):
// the blocks wait in the heap's stocks and page heap for reuse or the
// release timer, and a cache that grows or shrinks would keep them resident
// until then. Eviction's frees are not counted: the next Sets reuse them.
func (c *Cache) freed(n int64) {
	if c.own && c.freedBytes.Add(n) >= max(trimBytes, c.maxBytes/256) {
		c.freedBytes.Store(0)
		c.heap.Trim()
	}
}

// lookup finds k in the shard, which the caller has locked, and marks it
// read. It returns found false for a miss, and expired true for an entry
// whose time has passed, which the caller removes with expire after
// letting go of the lock.
func (c *Cache) lookup(s *shard, h uint64, k []byte) (e entry, found, expired bool) {
	i, found := s.find(h, k)
	if !found {
		s.counts.misses++
		return 0, false, false
	}
	e = s.entryAt(atomic.LoadUint64(&s.index.slots[i]))
	if x := e.expiry(); x != 0 && x <= c.now() {
		return 0, false, true
	}
	s.index.touch(i)
	s.counts.hits++
	return e, true, false
}

// expire removes k if it has expired, and counts the miss of the read that
// found it so. s is unlocked.
func (c *Cache) expire(s *shard, h uint64, k []byte) {
	s.lock()
	defer s.unlock()
	s.counts.misses++
	if s.closed {
		return
	}
	i, found := s.find(h, k)
	if !found {
		return
	}
	if x := s.entryAt(s.index.slots[i]).expiry(); x != 0 && x <= c.now() {
		s.counts.expirations++
		c.removeAt(s, i)
		c.afterRemove(s)
	}
}

// afterRemove rebuilds the index smaller once deletes have left it sparse,
// so that a cache that shrinks gives its index's memory back too, and does
// a compaction step if the shard's segments have thinned out.
func (c *Cache) afterRemove(s *shard) {
	if s.index.sparse() {
		_ = c.rebuildIndex(s, 0) // on failure the larger table stays, which is correct
	}
	c.compactStep(s)
}
