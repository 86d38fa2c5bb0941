package cache

import (
	"fmt"
	"time"
)

// set stores v under k with a lifetime of ttl (none if ttl <= 0).
func (c *Cache) set(k, v []byte, ttl time.Duration) error {
	if len(k) > maxKeyLen {
		return fmt.Errorf("%w: a key of %d bytes (at most %d)", ErrTooLarge, len(k), maxKeyLen)
	}
	size := entrySize(len(k), len(v))
	need := c.classSize(size)
	if need > c.maxEntry || uint64(len(v)) > 1<<32-1 {
		return fmt.Errorf("%w: an entry of %d bytes (at most MaxEntryBytes, %d)", ErrTooLarge, need, c.maxEntry)
	}
	h := c.hash(k)
	s := c.shardOf(h)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	var exp int64
	if ttl > 0 {
		exp = c.now() + int64(ttl)
	}
	removed, err := c.setLocked(s, h, k, v, size, need, exp)
	s.counts.sets++
	s.mu.Unlock()
	if removed > 0 {
		c.removed(removed)
	}
	c.compactStep()
	return err
}

// setLocked is set's work under the shard's lock. It returns how many
// entries it freed (evicted, expired or replaced).
func (c *Cache) setLocked(s *shard, h uint64, k, v []byte, size int, need, exp int64) (removed int, err error) {
	ev := s.counts.evictions + s.counts.expirations
	defer func() { removed += int(s.counts.evictions + s.counts.expirations - ev) }()
	i, found := s.index.find(h, k)
	if found {
		e := slotEntry(s.index.slots[i])
		if e.size() == size {
			// The same lengths: the value is rewritten in place.
			copy(e.value(), v)
			if e.expiry() != 0 {
				s.expiring--
			}
			if e.setExpiry(exp); exp != 0 {
				s.expiring++
			}
			return 0, nil
		}
		if !c.makeRoom(s, need-c.classSize(e.size()), i) {
			return 0, fmt.Errorf("%w: an entry of %d bytes does not fit its shard", ErrTooLarge, need)
		}
		b, err := c.heap.TryAlloc(size)
		if err != nil {
			return 0, fmt.Errorf("offheap: cache: %w", err)
		}
		ne := writeEntry(b, k, v, exp)
		s.index.slots[i] = s.index.slots[i]&^addrMask | addrField(uintptr(ne))
		c.release(s, e)
		c.account(s, need, exp)
		return 1, nil
	}
	if s.index.full() {
		if i, err = c.grow(s, h, k); err != nil {
			return 0, fmt.Errorf("offheap: cache: growing the index: %w", err)
		}
	}
	seen := s.counts.evictions + s.counts.expirations
	if !c.makeRoom(s, need, ^uint64(0)) {
		return 0, fmt.Errorf("%w: an entry of %d bytes does not fit its shard", ErrTooLarge, need)
	}
	b, err := c.heap.TryAlloc(size)
	if err != nil {
		return 0, fmt.Errorf("offheap: cache: %w", err)
	}
	ne := writeEntry(b, k, v, exp)
	if s.counts.evictions+s.counts.expirations != seen {
		// Evictions may have emptied slots ahead of the free slot find
		// gave: look again, so that the entry sits where its probe finds
		// it.
		i, _ = s.index.find(h, k)
	}
	s.index.put(i, slotOf(h, ne)|s.queue.admit(i))
	c.account(s, need, exp)
	return 0, nil
}

func (c *Cache) account(s *shard, need, exp int64) {
	s.bytes += need
	if exp != 0 {
		s.expiring++
	}
}
