package offheap

// Relocate's state of a size class, kept in its central: the summary that
// says whether any block of the class can move, and the span Relocate fills
// (the target) with the candidates for the next one.

import (
	"container/heap"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pageheap"
)

// Relocate's summary of a class (central.nsparse, nheld, movable) answers
// for a whole class at once, with one load of a word no fast path writes,
// what the dense check would otherwise learn from the span of every block: that no
// block of the class can move. A move takes a block of a span s with a
// live block and at most half of them live (a sparse span: one such span
// counted in nsparse) to the target, a listed span other than s with more
// live blocks than s (one more counted in nheld); s is listed too, since a
// span has a block to give, and so is on the partial list, whenever it is
// not full. So when nsparse is 0 or nheld below 2, or the one sparse span
// is the target itself (publish), relocate would refuse every block of the
// class, and Relocate refuses it without reading its span. A pass that
// converged leaves each class so: no sparse span, or a single listed one
// with nothing fuller to move into. Empty spans count in
// neither (they hold no block to move, and relocate never fills one), so
// a class's kept empty span does not hold the summary up.
//
// The counts are exact: every change of a span's live count (take, put,
// abandon) or listing (push, unlink) under mu is bracketed by relocKind
// before and recount after (grow and freeSpan touch only empty spans).
// movable is read without mu, as spanLive is: a Relocate that reads it
// false while another goroutine makes a span sparse misses a move, as it
// would reading the span a moment earlier.

// spanKind is a span's part in its class's summary: sparse and held bits.
type spanKind uint8

const (
	kindSparse spanKind = 1 << iota // counted in nsparse
	kindHeld                        // counted in nheld
)

// relocClass is Relocate's state of one size class, kept in the class's
// central and guarded by its lock, except movable, which is read without
// it. Central feeds it through one hook: relocKind before a change of a
// span's live count or listing, recount after.
type relocClass struct {
	// reloc is the span Relocate fills (the target), 0 for none chosen;
	// cands are the spans it may fill next, a heap by their live blocks,
	// and scanBudget the looks at them left before the partial list is
	// scanned again (target).
	reloc      uint32
	scanBudget uint32
	cands      spanOrder

	// The summary: nsparse counts the spans with a live block and at most
	// half their blocks live, nheld the listed spans with a live block, and
	// movable says whether a move may be possible (publish).
	nsparse uint32
	nheld   uint32
	movable atomic.Bool
}

// relocKind is s's part in its class's summary. Called with mu held.
func (s *span) relocKind() spanKind {
	live := s.carved - s.nfree
	if live == 0 {
		return 0
	}
	var k spanKind
	if sparseSpan(live, classBlocks[s.class]) {
		k |= kindSparse
	}
	if s.listed {
		k |= kindHeld
	}
	return k
}

// recount moves s's part in the summary from was (its relocKind before the
// change) to what it is now, and publishes movable. Called with mu held.
func (c *relocClass) recount(ph *pageheap.Heap, s *span, was spanKind) {
	now := s.relocKind()
	if now == was {
		return
	}
	c.nsparse += uint32(now&kindSparse) - uint32(was&kindSparse)
	c.nheld += uint32(now&kindHeld>>1) - uint32(was&kindHeld>>1)
	c.publish(ph, s.class)
}

// publish stores movable: whether the counts leave a move possible. They
// do when a sparse span and another held one exist, unless the one sparse
// span is the target itself, which relocate keeps while it is listed
// (target) and never moves a block out of. Called with mu held, after the
// counts or the target change; class is the class's.
func (c *relocClass) publish(ph *pageheap.Heap, class uint8) {
	m := c.nsparse > 0 && c.nheld >= 2
	if m && c.nsparse == 1 && c.reloc != 0 {
		t := spanAt(ph, c.reloc)
		m = !(t.listed && t.class == class && t.relocKind()&kindSparse != 0)
	}
	if m != c.movable.Load() {
		c.movable.Store(m)
	}
}

// sparseSpan reports whether a span of a class of blocks per span, live of
// them live, is sparse enough for Relocate to move its blocks out: at most
// half full. A fuller span is left as it is: emptying it would move more
// blocks than it frees, and the class average, the threshold jemalloc's
// defragmentation hint uses, would keep the spans just above it (half of
// them, right after an eviction at random) out of a single pass.
func sparseSpan(live, blocks uint32) bool { return live <= blocks/2 }

// spanLive is how many of s's blocks are live (handed out, or held by a
// magazine, a depot or a Local), read without the central lock that guards
// s: a hint, which Relocate checks again under the lock. nfree is read
// first, so that the difference cannot wrap (carved only grows while a span
// lives, and nfree never passes it). The span array is metadata, mapped
// outside Go's memory in every build.
func spanLive(s *span) uint32 {
	free := atomic.LoadUint32(&s.nfree)
	return atomic.LoadUint32(&s.carved) - free
}

// forget drops the candidates, so that a pass after a Trim starts from a
// fresh order (target). Called with mu held.
func (c *relocClass) forget() { c.cands, c.scanBudget = nil, 0 }

// spanOrder is Relocate's candidate targets, a heap of the spans' live
// blocks << 32 | their ids, the fullest first (container/heap). A key is
// its span's live blocks at the scan. Spans other than the target only
// lose blocks to a pass, so once the first's key is brought down to what
// it holds, it is the fullest (target); a span that a refill took blocks
// from since is fuller than its key, and chosen later than a scan would.
type spanOrder []uint64

func (o spanOrder) Len() int           { return len(o) }
func (o spanOrder) Less(i, j int) bool { return o[i] > o[j] }
func (o spanOrder) Swap(i, j int)      { o[i], o[j] = o[j], o[i] }
func (o *spanOrder) Push(x any)        { *o = append(*o, x.(uint64)) }
func (o *spanOrder) Pop() any {
	old := *o
	x := old[len(old)-1]
	*o = old[:len(old)-1]
	return x
}

// popFirst drops the first, as heap.Pop would without boxing it.
func (o *spanOrder) popFirst() {
	n := len(*o) - 1
	(*o)[0] = (*o)[n]
	*o = (*o)[:n]
	if n > 0 {
		heap.Fix(o, 0)
	}
}
