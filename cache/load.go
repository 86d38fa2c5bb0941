package cache

// Loading a snapshot's records in batches: a block's records are parsed
// and hashed first, then sorted by shard, and each shard's run is stored
// under one hold of its lock, as Set would store each (so a full cache
// evicts as it loads, and a key loaded twice keeps its last value).

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"
)

// loadRecord is one record of a block being loaded.
type loadRecord struct {
	h      uint64
	k, v   []byte
	exp    int64 // wall-clock expiry, ns; 0 for none
	rlen   int
	extLen int64
}

// loadScratch is a load worker's memory, reused block to block.
type loadScratch struct {
	raw    []byte       // decompressed records
	recs   []loadRecord // the block's records
	sorted []int32      // recs' indexes by shard
	starts []int32      // per shard, its first index in sorted (counting sort)
	first  int          // the shard this worker stores its runs from (see loadRecords)
	sink   uint64       // keeps loadShard's warming reads from being optimized away
}

// loadRecords checks a block's records against their checksum and stores
// them, returning how many it held.
func (c *Cache) loadRecords(b []byte, count, sum uint32, sc *loadScratch) (uint64, error) {
	if crc32.Checksum(b, castagnoli) != sum {
		return 0, fmt.Errorf("%w: checksum mismatch", ErrSnapshot)
	}
	wall := time.Now().UnixNano()
	sc.recs = sc.recs[:0]
	for n := range count {
		if len(b) < recordHeader {
			return 0, fmt.Errorf("%w: record %d of a block cut short", ErrSnapshot, n)
		}
		kl := int64(binary.LittleEndian.Uint32(b))
		vl := int64(binary.LittleEndian.Uint32(b[4:]))
		exp := int64(binary.LittleEndian.Uint64(b[8:]))
		b = b[recordHeader:]
		if kl+vl > int64(len(b)) {
			return 0, fmt.Errorf("%w: record %d of a block cut short", ErrSnapshot, n)
		}
		k, v := b[:kl], b[kl:kl+vl]
		b = b[kl+vl:]
		if exp != 0 && exp <= wall {
			continue
		}
		rlen, extLen, err := c.recordSizes(k, v, exp != 0)
		if err != nil {
			continue // too large for this cache: skipped
		}
		sc.recs = append(sc.recs, loadRecord{h: c.hash(k), k: k, v: v, exp: exp, rlen: rlen, extLen: extLen})
	}
	if len(b) != 0 {
		return 0, fmt.Errorf("%w: %d bytes after a block's records", ErrSnapshot, len(b))
	}
	// Counting sort of the records by shard.
	ns := len(c.shards)
	if cap(sc.starts) < ns+1 {
		sc.starts = make([]int32, ns+1)
	}
	starts := sc.starts[:ns+1]
	clear(starts)
	for i := range sc.recs {
		starts[sc.recs[i].h&c.shardMask+1]++
	}
	for i := 1; i <= ns; i++ {
		starts[i] += starts[i-1]
	}
	if cap(sc.sorted) < len(sc.recs) {
		sc.sorted = make([]int32, len(sc.recs))
	}
	sorted := sc.sorted[:len(sc.recs)]
	for i := range sc.recs {
		si := sc.recs[i].h & c.shardMask
		sorted[starts[si]] = int32(i)
		starts[si]++
	}
	// starts[si] is now the end of shard si's run. The workers go round
	// the shards from points apart (sc.first), so that two do not wait
	// for one lock shard after shard. The clock is read once a block: on
	// some machines a read is a system call.
	now := c.now()
	for j := range ns {
		si := (sc.first + j) & (ns - 1)
		begin, end := int32(0), starts[si]
		if si > 0 {
			begin = starts[si-1]
		}
		if end > begin {
			if err := c.loadShard(&c.shards[si], sc, sorted[begin:end], wall, now); err != nil {
				return 0, err
			}
		}
	}
	c.relocateStep()
	return uint64(count), nil
}

// loadShard stores the records of sc.recs at idx, all of shard s, under
// one hold of its lock; wall and now are the wall clock and c.now() as the
// block began.
func (c *Cache) loadShard(s *shard, sc *loadScratch, idx []int32, wall, now int64) error {
	recs := sc.recs
	s.lock()
	if s.closed {
		s.unlock()
		return ErrClosed
	}
	// Read each record's first slot before storing any: the reads miss
	// the processor's caches, and independent misses overlap, where the
	// stores' probes, one after another, would wait for each in turn.
	var warm uint64
	for _, i := range idx {
		warm += s.index.slots[s.index.home(recs[i].h)]
	}
	sc.sink = warm
	ev := s.counts.evictions + s.counts.expirations
	replaced := 0
	s.loading = true
	for _, i := range idx {
		r := &recs[i]
		var exp int64
		if r.exp != 0 {
			exp = expiryAfter(now, r.exp-wall)
		}
		n, _ := c.setLocked(s, r.h, r.k, r.v, r.rlen, r.extLen, exp) // an entry that does not fit is skipped
		replaced += n
		s.counts.sets++
	}
	s.loading = false
	removed := int(s.counts.evictions+s.counts.expirations-ev) + replaced
	c.compactStep(s)
	check := removed > 0 && c.countRemovals(s, removed)
	s.unlock()
	if check {
		c.checkHeap()
	}
	return nil
}
