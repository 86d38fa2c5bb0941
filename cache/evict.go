package cache

// Eviction: S3-FIFO (Yang et al., SOSP 2023) in log form. Each shard has a
// small log, about a tenth of its bytes, and a main log. A new entry is
// appended to the small log, unless the ghost (below) remembers its key,
// when it goes straight to main. A read raises the entry's 2-bit counter in
// its slot. When the shard needs room, the head segment of the small log
// (while that log holds more than a tenth of the shard's bytes, counting the
// values its records keep in blocks of their own) or of the main log is
// evicted, record by record from where the last eviction stopped, until
// the room is made or the segment ends: each live record in it
//
//   - has expired: removed (an expiration);
//   - is in the small log and was read: copied to the main log's tail, its
//     counter cleared;
//   - is in the main log and its counter is above 0: copied to the main
//     log's tail, its counter lowered by one;
//   - otherwise: removed (an eviction); its key's hash is added to the ghost
//     if it leaves the small log.
//
// and at its end the segment goes back to the heap. A record whose value
// is in a block of its own gives that block's room back as it goes, so in
// a shard of large values, whose few-byte records share one segment, an
// eviction takes about the room it needs, not the whole log. So a scan's
// entries, read once, leave through the small log and never push the main
// log's entries out, and an entry read since it was last passed survives
// its next pass. Work per eviction is bounded: each pass over the main log
// lowers every counter it copies, so a shard frees a segment after at most
// four passes.
//
// The ghost is two generations of a Bloom filter with two bits a key, each
// generation taking as many keys as the table has slots halved, then the
// older is cleared and becomes the newer: so it remembers about the last
// main log's worth of keys evicted from small, as S3-FIFO's ghost queue
// does, at one byte per index slot, with some false positives (which only
// admit a new entry to main directly). It is allocated at the first
// eviction from small, so a cache that never fills never pays for it.

import (
	"sync/atomic"
	"unsafe"
)

// touch marks live slot i as read: its counter goes up by one, to at most
// 3. Reads that take no lock touch slots too (read.go): the counter is
// raised with a compare-and-swap, at most once a read, and a slot at 3 is
// not written.
func (t *table) touch(i int) {
	p := &t.slots[i]
	v := atomic.LoadUint64(p)
	if slotFreq(v) != freqMax {
		atomic.CompareAndSwapUint64(p, v, v+1<<freqShift)
	}
}

// makeRoom evicts until the shard's bytes plus need fit its budget. It
// returns false if they cannot (the shard has nothing left to evict).
func (c *Cache) makeRoom(s *shard, need int64) bool {
	for budget := c.budget.Load(); s.bytes+need > budget; {
		if !c.evictOne(s, budget-need) {
			return false
		}
	}
	return true
}

// evictOne evicts from the head segment of the small or the main log until
// the shard's bytes are at most fit or the segment is freed, and reports
// whether there was one. The logs' sizes count the values kept in blocks
// of their own: in a shard of such values, whose records are a few bytes
// each, a log may be a single segment, and its proportions and its
// evictions are those of its values.
func (c *Cache) evictOne(s *shard, fit int64) bool {
	small, main := &s.logs[logSmall], &s.logs[logMain]
	switch {
	case len(small.ids) > 0 && (small.size()*10 > small.size()+main.size() || len(main.ids) == 0):
		c.evictHead(s, logSmall, fit)
	case len(main.ids) > 0:
		c.evictHead(s, logMain, fit)
	default:
		return false
	}
	return true
}

// evictHead evicts log li's head segment record by record from where the
// last call stopped (see the top of the file), until the shard's bytes are
// at most fit, which a record's value in a block of its own can bring
// about, or until the segment's end, when the segment is freed.
func (c *Cache) evictHead(s *shard, li int, fit int64) {
	l := &s.logs[li]
	id := l.ids[0]
	var now int64
	if s.expiring > 0 {
		now = c.now()
	}
	l.head = s.recordsFrom(id, l.head, func(e entry, off int) bool {
		h := c.hash(e.key())
		i := s.findLoc(h, locOf(id, off))
		v := s.index.slots[i]
		if x := e.expiry(); x != 0 && x <= now {
			s.counts.expirations++
			c.removeAt(s, i)
			return s.bytes > fit
		}
		if f := slotFreq(v); f > 0 {
			if li == logSmall {
				f = 0
			} else {
				f--
			}
			s.index.slots[i] = v&^(freqMax<<freqShift) | f<<freqShift
			if c.move(s, i, logMain) {
				return true
			}
		} else if li == logSmall {
			c.ghostAdd(s, h)
		}
		s.counts.evictions++
		c.removeAt(s, i)
		return s.bytes > fit
	})
	// The head may be the tail too: then Sets, and copies forward within
	// main, append after the records passed, and are passed in their turn.
	// The segment is freed once every record in it has been passed, none
	// appended since (a tail freed so is closed: the next append opens one).
	if l.head < int(s.segs[id].used) {
		return
	}
	l.dropID(0)
	c.dropSegment(s, id)
}

// move copies live slot i's record to the tail of log li and points the
// slot at the copy. It returns false, moving nothing, if no segment could
// be opened.
func (c *Cache) move(s *shard, i, li int) bool {
	v := s.index.slots[i]
	e := s.entryAt(v)
	n := e.size()
	if c.reserve(s, li, n) != nil {
		return false
	}
	if b := e.ext(); b != nil {
		cs := c.classSize(len(b))
		s.logs[s.segs[slotSeg(v)].log].ext -= cs
		s.logs[li].ext += cs
	}
	a, loc := s.place(li, n, e.flags()&flagExt != 0)
	copy(unsafe.Slice((*byte)(ptr(a)), n), unsafe.Slice((*byte)(ptr(uintptr(e))), n))
	e.markDead()
	s.segs[slotSeg(v)].live -= int32(n)
	s.live -= int64(n)
	s.index.slots[i] = v&^locMask | loc
	return true
}

// ghost is a shard's memory of keys evicted from the small log.
type ghost struct {
	bits  []uint64 // a heap block: two generations of words; nil until first used
	cur   int      // the newer generation, 0 or 1
	adds  int      // keys added to the newer generation
	limit int      // keys a generation takes
}

func (g *ghost) bytes() int64 { return int64(len(g.bits)) * 8 }

// pos is h's two bit positions within a generation.
func (g *ghost) pos(h uint64) (uint64, uint64) {
	x := h * 0x9E3779B97F4A7C15
	m := uint64(len(g.bits)/2*64) - 1
	return x >> 32 & m, uint64(uint32(x)) & m
}

func (g *ghost) has(h uint64) bool {
	if g.bits == nil {
		return false
	}
	a, b := g.pos(h)
	half := uint64(len(g.bits) / 2)
	for gen := range uint64(2) {
		w := g.bits[gen*half:]
		if w[a>>6]&(1<<(a&63)) != 0 && w[b>>6]&(1<<(b&63)) != 0 {
			return true
		}
	}
	return false
}

// ghostAdd remembers h, allocating the shard's ghost if it has none.
func (c *Cache) ghostAdd(s *shard, h uint64) {
	g := &s.ghost
	if g.bits == nil {
		words := 8
		for words*16 < len(s.index.slots) {
			words *= 2
		}
		b, err := c.heap.TryAlloc(2 * words * 8)
		if err != nil {
			return // no ghost: every new entry starts in the small log
		}
		g.bits = unsafe.Slice((*uint64)(ptr(addrOf(b))), 2*words)
		g.limit = max(len(s.index.slots)/2, 64)
		s.bytes += g.bytes()
	}
	half := len(g.bits) / 2
	if g.adds >= g.limit {
		g.cur ^= 1
		clear(g.bits[g.cur*half : (g.cur+1)*half])
		g.adds = 0
	}
	a, b := g.pos(h)
	w := g.bits[g.cur*half:]
	w[a>>6] |= 1 << (a & 63)
	w[b>>6] |= 1 << (b & 63)
	g.adds++
}

// freeGhost gives the shard's ghost back to the heap; the next eviction
// from small allocates one sized for the table then.
func (c *Cache) freeGhost(s *shard) {
	g := &s.ghost
	if g.bits != nil {
		s.bytes -= g.bytes()
		c.heap.Free(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(g.bits))), len(g.bits)*8))
	}
	*g = ghost{}
}
