package cache

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/offheap/offheap"
)

// set stores v under k with a lifetime of ttl (none if ttl <= 0).
func (c *Cache) set(k, v []byte, ttl time.Duration) error {
	rlen, extLen, err := c.recordSizes(k, v, ttl > 0)
	if err != nil {
		return err
	}
	h := c.hash(k)
	s := c.shardOf(h)
	s.lock()
	if s.closed {
		s.unlock()
		return ErrClosed
	}
	var exp int64
	if ttl > 0 {
		exp = expiryAfter(c.now(), int64(ttl))
	}
	ev := s.counts.evictions + s.counts.expirations
	replaced, err := c.setLocked(s, h, k, v, rlen, extLen, exp)
	removed := int(s.counts.evictions+s.counts.expirations-ev) + replaced
	s.counts.sets++
	check := false
	if removed > 0 { // else no record died: an in-place rewrite or an append
		c.compactStep(s)
		check = c.countRemovals(s, removed)
	}
	s.unlock()
	if check {
		c.checkHeap()
	}
	c.relocateStep()
	return err
}

// allocRecord makes what a record of rlen bytes needs: room at the tail of
// log li and, if extLen > 0, a block of its own for its value of n bytes,
// which it returns. Where the heap refuses (its Limit, shared with other
// users or below MaxBytes; the system's memory), it evicts from the shard
// and asks again, until the shard has nothing left to evict: a cache that
// stopped storing at its heap's limit would keep its oldest entries for
// ever. The block comes first, so that no eviction runs once the tail has
// room (it could free that tail).
func (c *Cache) allocRecord(s *shard, li, rlen, n int, extLen int64) ([]byte, error) {
	var ext []byte
	for extLen > 0 {
		b, err := c.heap.TryAllocUnzeroed(n)
		if err == nil {
			ext = b
			break
		}
		if !c.evictForHeap(s, extLen, err) {
			return nil, err
		}
	}
	for {
		err := c.reserve(s, li, rlen)
		if err == nil {
			break
		}
		if !c.evictForHeap(s, int64(c.segSize), err) {
			if ext != nil {
				c.heap.Free(ext)
			}
			return nil, err
		}
	}
	s.bytes += extLen
	return ext, nil
}

// growEvicting is grow that, where the heap refuses the new table,
// evicts as allocRecord does and tries again, until the table has room or
// nothing is left to evict.
func (c *Cache) growEvicting(s *shard) error {
	for {
		err := c.grow(s)
		if err == nil || errors.Is(err, ErrTooLarge) {
			return err // ErrTooLarge: the shard's budget, which makeRoom has evicted for
		}
		if !c.evictForHeap(s, s.index.bytes(), err) {
			return err
		}
		if !s.index.full() {
			return nil
		}
	}
}

// evictForHeap evicts about need bytes after the heap refused an
// allocation for s with err, and reports whether it evicted anything (not
// after the heap's Close). It evicts from s, whose lock the caller holds,
// and from another shard once s has nothing left: the heap's memory may
// all be in the other shards, the shards that filled first. Their locks
// are only tried, in turn from heapVictim: two shards doing this at once
// must not wait for each other.
func (c *Cache) evictForHeap(s *shard, need int64, err error) bool {
	if errors.Is(err, offheap.ErrClosed) {
		return false
	}
	if c.evictOne(s, s.bytes-need) {
		return true
	}
	if errors.Is(err, ErrTooLarge) {
		return false // s's own bound (its segment numbers): the others' memory is no help
	}
	n := uint32(len(c.shards))
	first := c.heapVictim.Add(1)
	for j := range n {
		o := &c.shards[(first+j)%n]
		if o == s || !o.tryLock() {
			continue
		}
		ok := !o.closed && c.evictOne(o, o.bytes-need)
		o.unlock()
		if ok {
			return true
		}
	}
	return false
}

// expiryAfter is the reading of a clock d (> 0) after at, at most
// math.MaxInt64: a lifetime past the clock's range, such as
// time.Duration(math.MaxInt64) for "forever", never comes round, where
// the sum would wrap to a time long past and expire the entry at once.
func expiryAfter(at, d int64) int64 {
	if at > 0 && d > math.MaxInt64-at {
		return math.MaxInt64
	}
	return at + d
}

// recordSizes is the record length for key k and value v, with an expiry
// if ttl, and the class size of the value's own block, if it needs one
// (else 0); or ErrTooLarge, wrapped, if the cache cannot hold the entry.
// extFrom is the largest record whose value is kept in its segment: a
// larger value gets a heap block of its own (or, in a shard of small
// segments, one over a quarter of a segment). Eviction and compaction copy
// records forward, so a large value kept inline is copied each time its
// entry is kept past its segment's turn; in a block of its own only its
// record moves.
const extFrom = 4 << 10

func (c *Cache) recordSizes(k, v []byte, ttl bool) (rlen int, extLen int64, err error) {
	if len(k) > maxKeyLen {
		return 0, 0, fmt.Errorf("%w: a key of %d bytes (at most %d)", ErrTooLarge, len(k), maxKeyLen)
	}
	rlen = recordLen(len(k), len(v), ttl, false)
	if rlen > min(c.segSize/4, extFrom) {
		rlen = recordLen(len(k), len(v), ttl, true)
		extLen = c.classSize(len(v))
	}
	if need := extLen + int64(rlen); need > c.maxEntry || rlen > c.segSize || uint64(len(v)) > 1<<32-1 {
		return 0, 0, fmt.Errorf("%w: an entry of %d bytes (at most MaxEntryBytes, %d, and a key shorter than %d bytes): "+
			"a larger Options.MaxBytes, or fewer Options.Shards, raises MaxEntryBytes",
			ErrTooLarge, need, c.maxEntry, c.segSize-3*headerSize)
	}
	return rlen, extLen, nil
}

// setLocked is set's work under the shard's lock: a record of rlen bytes
// (its value in a block of its own of extLen bytes, if extLen > 0). It
// returns 1 if it replaced a value, else 0.
func (c *Cache) setLocked(s *shard, h uint64, k, v []byte, rlen int, extLen, exp int64) (int, error) {
	i, found := s.find(h, k)
	li, refind := logSmall, false
	if found {
		old := s.index.slots[i]
		e := s.entryAt(old)
		if extLen == 0 && e.flags()&flagExt == 0 && e.size() == rlen && (e.expiry() != 0) == (exp != 0) {
			// The same record length: the value is rewritten in place.
			writeRecord(uintptr(e), k, v, nil, exp)
			return 0, nil
		}
		li = int(s.segs[slotSeg(old)].log) // a new value keeps its entry's standing
	} else {
		if s.index.full() {
			if err := c.growEvicting(s); err != nil {
				return 0, &heapError{"growing the index", err}
			}
			refind = true
		}
		if s.ghost.has(h) {
			li = logMain
		}
	}
	need := extLen
	if !c.tailRoom(s, li, rlen) {
		need += int64(c.segSize)
	}
	seen := s.counts.evictions + s.counts.expirations
	if !c.makeRoom(s, need) {
		return 0, fmt.Errorf("%w: an entry of %d bytes does not fit its shard: a larger Options.MaxBytes, or fewer Options.Shards, "+
			"gives each shard more", ErrTooLarge, need+int64(rlen))
	}
	ext, err := c.allocRecord(s, li, rlen, len(v), extLen)
	if err != nil {
		return 0, &heapError{"storing an entry", err}
	}
	if refind || s.counts.evictions+s.counts.expirations != seen {
		// Evictions may have removed k or emptied slots ahead of the
		// free slot find gave (and grow renumbers them): look again, so
		// that the entry sits where its probe finds it.
		i, found = s.find(h, k)
	}
	a, loc := s.place(li, rlen, ext != nil)
	s.logs[li].ext += extLen
	writeRecord(a, k, v, ext, exp)
	if exp != 0 {
		s.expiring++
	}
	if found {
		old := s.index.slots[i]
		c.kill(s, old)
		s.index.slots[i] = old&^locMask | loc
		return 1, nil
	}
	s.index.put(i, tagOf(h)<<tagShift|loc)
	return 0, nil
}
