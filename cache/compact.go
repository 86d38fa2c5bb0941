package cache

// Compaction: the cache rewrites its own segments when deletes and
// replacements have left them thin, so that after churn its heap gives
// pages back instead of keeping every segment a few survivors pin.
//
// The rule. A shard's dead bytes are its segments' bytes less its live
// records' bytes and the unused ends of its logs' tails (not written yet;
// the tails a compaction opens have those pages released, releaseTail, so
// they are not resident either). After each Set and Delete (and expiry)
// that removes a record, under the shard's lock, if the dead bytes exceed a
// sixteenth of the records' bytes (live plus dead), the segment with the
// most dead bytes among those whose dead bytes exceed a sixteenth of their
// own records' bytes, and a 64th of a segment, is rewritten: its live
// records are copied to its log's tail (a fresh one if it was the tail),
// their slots pointed at the copies, and the segment freed to the heap.
// Some segment qualifies whenever the shard does (its dead fraction is the
// shard's average, or above), unless its dead bytes are under a 64th of a
// segment: so, once the calls that follow removals have caught up, a
// shard's dead bytes are at most a sixteenth of its records' bytes plus a
// 64th of a segment, whatever its size. The threshold is on the records'
// bytes, not on the segments': a shard that shrank keeps two mostly unused
// tails, and counting them would let the dead bytes grow with the tails
// instead of with what the shard holds. A call's extra work is bounded by
// one segment, and a rewrite copies less than 15 times the dead bytes it
// frees, so the copying is under 15 bytes per byte removed; a shard whose
// records were 90% deleted is rewritten by about as many calls as it has
// segments. The rewritten segment's whole pages go back to the operating
// system as it is freed (release), so a shrinking cache's resident memory
// follows its records call by call, with no Trim.
// Eviction frees the head segments of the logs whole, so a full cache also
// reclaims dead bytes as its logs turn over.
//
// The heap's spans. Segments are blocks of a size class, several to a
// span, so segments freed in different spans can leave each span holding a
// live one. The same check as the bound's (below) reads the heap's Stats:
// if the free bytes its spans hold exceed an eighth of the bytes in use, a
// pass begins, which moves whole segments (Heap.RelocateAll) into fuller
// spans: each Set and Delete that finds a pass under way (and no other call
// running a step) moves one shard's segments, under its lock, and points
// segs at the new addresses (slots name a segment by number, so no slot
// changes). The cache's own heap is trimmed before and after a pass, so
// that the blocks freed into the per-P stocks count as free for the spans
// and the emptied spans go back to the operating system; so is it at a
// check that finds the stocks holding more than an eighth of the bytes in
// use (old index tables, mostly).
//
// The bound. Each shard also counts its removals (Delete, eviction,
// expiry, a replaced value), under its lock; once a shard's count since it
// last reported reaches its share of an eighth of the entries at the last
// check (at least 1024 in all), it reports, and the call that makes a
// round of reports as many as the shards reads the heap's Stats and, when
// the cache owns its heap, adjusts the shards' budget (fitBudget): the
// heap's footprint, slack included, is held under MaxBytes by evicting
// more where the slack grows, down to three quarters of the nominal
// budget.

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/internal/osmem"
)

const (
	// compactFrac: a shard is compacted while its dead bytes exceed this
	// fraction (1/compactFrac) of its records' bytes, live and dead, and a
	// segment is rewritten only if its own dead bytes do.
	compactFrac = 16
	// minGain: a rewrite frees at least 1/minGain of a segment, so that a
	// shard whose records are few does not rewrite a segment for a record.
	minGain = 64

	minCheckGap  = 1024
	sparseFactor = 8 // a pass runs when free span bytes exceed in-use bytes / sparseFactor
)

// compactor holds the state of the heap check and its passes. Its mutex
// orders the checks and the steps of a pass; a call that finds it held
// skips its step.
type compactor struct {
	threshold atomic.Int64  // removals, over all shards, between two checks
	reports   atomic.Uint64 // shards' reports that their share was reached
	active    atomic.Bool   // a pass is under way
	mu        sync.Mutex
	// Guarded by mu.
	shard int      // the shard the pass is in
	batch [][]byte // the segments of a step
	ids   []uint32 // their numbers
}

// dead is the shard's dead bytes.
func (c *Cache) dead(s *shard) int64 {
	d := s.logs[logSmall].bytes + s.logs[logMain].bytes - s.live
	for li := range s.logs {
		if t := s.logs[li].tail; t != 0 {
			d -= int64(c.segSize) - int64(s.segs[t].used)
		}
	}
	return d
}

// compactStep rewrites one of the shard's segments if the shard is past
// the rule above: of the segments whose dead bytes exceed a compactFrac of
// their records' bytes and minGain, the one with the most.
func (c *Cache) compactStep(s *shard) {
	d, least := c.dead(s), int64(c.segSize/minGain)
	if d < least || d*compactFrac <= s.live+d {
		return
	}
	best, bestDead := uint32(0), least-1
	for li := range s.logs {
		l := &s.logs[li]
		for _, id := range l.ids {
			g := &s.segs[id]
			used := int64(c.segSize)
			if id == l.tail {
				used = int64(g.used)
			}
			if d := used - int64(g.live); d > bestDead && d*compactFrac > used {
				best, bestDead = id, d
			}
		}
	}
	if best == 0 {
		return
	}
	li := int(s.segs[best].log)
	l := &s.logs[li]
	if l.tail == best || !c.tailRoom(s, li, int(s.segs[best].live)) {
		// The live records fill the tail, then a fresh one, whose block
		// is taken first: where the heap has no memory (its Limit) the
		// rewrite waits, rather than evict the records it could not move.
		b, err := c.heap.TryAllocUnzeroed(c.segSize)
		if err != nil {
			return
		}
		s.spare = b
	}
	if l.tail == best {
		l.tail = 0 // the live records go to a fresh tail
	}
	tail := l.tail
	for j, id := range l.ids {
		if id == best {
			l.dropID(j)
			break
		}
	}
	s.records(best, func(e entry, off int) bool {
		i := s.findLoc(c.hash(e.key()), locOf(best, off))
		if !c.move(s, i, li) {
			s.counts.evictions++
			c.removeAt(s, i)
		}
		return true
	})
	if s.spare != nil { // the tail took them all
		c.heap.Free(s.spare)
		s.spare = nil
	}
	// A shard at its budget opens a segment again soon, and the heap hands
	// out the one freed last: giving its pages back would cost a release
	// now and a fault per page then, with the shard locked both times.
	// Only a shard well under its budget, one that is shrinking, gives
	// them back at once.
	if s.bytes <= c.budget.Load()*3/4 {
		if l.tail != tail {
			c.releaseTail(s, li)
		}
		g := &s.segs[best]
		release(g.addr, g.addr+uintptr(c.segSize))
	}
	c.dropSegment(s, best)
	s.counts.compactions++
}

// releaseTail gives the system the whole pages of log li's tail past its
// used bytes. A compaction opens tails in a shrinking shard, and the heap
// hands out the pages it freed last, still resident: without this, a tail
// would keep a segment resident however few records it holds, and a shard
// that shrank to a few segments would keep two (its logs' tails) for the
// records of one. The pages come back zeroed at the next write.
func (c *Cache) releaseTail(s *shard, li int) {
	if id := s.logs[li].tail; id != 0 {
		g := &s.segs[id]
		release(g.addr+uintptr(g.used), g.addr+uintptr(c.segSize))
	}
}

// release gives the system the whole pages between from and to, memory the
// cache holds and does not need resident. A compaction in a shrinking
// shard releases the segment it rewrote before freeing it, so that a
// shrinking cache's memory follows its records at once, without a Trim
// (which stops the world) or the heap's release timer; a segment that
// shares its span with others (a small shard's) gives its pages back too,
// where freeing it would keep the span. The heap counts the pages as free,
// not released, until it releases them itself; a block reused before then
// reads zeros.
func release(from, to uintptr) {
	page := osmem.PageSize
	from = (from + page - 1) &^ (page - 1)
	if to &^= page - 1; to > from {
		_ = osmem.Release(ptr(from), to-from) // on failure the pages stay resident, which is correct
	}
}

// countRemovals counts n removals in s, whose lock the caller holds, and
// reports whether the heap check (checkHeap) is due. A shard reports once
// its removals since it last reported reach its share of the threshold,
// and every len(shards)th report is due: one check per threshold's worth
// of removals over all shards, however many shards there are. Each shard
// counts its own under its lock, so that writers on different shards share
// a cache line once per report, not once per removal.
func (c *Cache) countRemovals(s *shard, n int) bool {
	s.removals += n
	if int64(s.removals)*int64(len(c.shards)) < max(c.compactor.threshold.Load(), minCheckGap) {
		return false
	}
	s.removals = 0
	// The shards reach their shares at about the same time: one check for
	// each round of reports, not one for each shard.
	return c.compactor.reports.Add(1)%uint64(len(c.shards)) == 0
}

// checkHeap checks the heap's footprint against MaxBytes, unless another
// call is checking it.
func (c *Cache) checkHeap() {
	p := &c.compactor
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if c.closed.Load() {
		return
	}
	p.threshold.Store(int64(c.Len() / 8))
	st := c.heap.Stats()
	if c.own {
		c.fitBudget(st)
	}
	if p.active.Load() {
		return
	}
	if c.own && (st.MagazineBytes+st.DepotBytes+unreleased(st))*sparseFactor > st.InUseBytes {
		// Freed blocks (old index tables, mostly) wait in the heap's
		// stocks: back to their spans, and empty spans to the system.
		c.heap.Trim()
		st = c.heap.Stats()
	}
	if st.SpanFreeBytes*sparseFactor > st.InUseBytes {
		p.shard = 0
		p.active.Store(true)
	}
}

// unreleased is the heap's free pages not yet given back to the system.
func unreleased(st offheap.Stats) uint64 {
	foot := st.InUseBytes + st.SpanFreeBytes + st.MagazineBytes + st.DepotBytes + st.LocalBytes
	if st.MappedBytes > foot {
		return st.MappedBytes - foot
	}
	return 0
}

// relocateStep moves one shard's segments into fuller spans, if a pass is
// under way and no other call is running a step.
func (c *Cache) relocateStep() {
	p := &c.compactor
	if !p.active.Load() || !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if c.closed.Load() || !p.active.Load() {
		return
	}
	s := &c.shards[p.shard]
	s.lock()
	if !s.closed {
		p.batch, p.ids = p.batch[:0], p.ids[:0]
		for id := range s.segs {
			if a := s.segs[id].addr; a != 0 {
				p.batch = append(p.batch, unsafe.Slice((*byte)(ptr(a)), c.segSize))
				p.ids = append(p.ids, uint32(id))
			}
		}
		if c.heap.RelocateAll(p.batch) > 0 {
			for j, b := range p.batch {
				s.segs[p.ids[j]].addr = addrOf(b)
			}
		}
		clear(p.batch)
	}
	s.unlock()
	if p.shard++; p.shard == len(c.shards) {
		p.active.Store(false)
		if c.own {
			c.heap.Trim()
		}
	}
}

// fixedReserve is the heap's footprint that does not grow with the cache:
// for each size class in use, a partly used span and the empty spans it keeps
// for reuse, and the per-P stocks. fitBudget allows it beyond MaxBytes, so
// that a small cache is not squeezed by a reserve it cannot shed.
const fixedReserve = 256 << 10

// fitBudget adjusts the shards' budget so that the heap's footprint (its
// mapped bytes: blocks in use, the free blocks its spans and stocks hold,
// and free pages not yet given back, such as the segment an eviction frees
// after copying forward into a new one) stays within MaxBytes: when the footprint passes 31/32 of MaxBytes (plus fixedReserve), the budget shrinks
// by the excess (and evictions follow at the next Sets); when it is below,
// the budget grows back toward shardBudget by half the room. It stays
// between 3/4 of shardBudget and shardBudget.
func (c *Cache) fitBudget(st offheap.Stats) {
	foot := int64(max(st.MappedBytes, st.InUseBytes+st.SpanFreeBytes+st.MagazineBytes+st.DepotBytes+st.LocalBytes))
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
