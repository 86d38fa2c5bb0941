package offheap

// The span Relocate fills for a class with the blocks of its sparse spans.

import (
	"container/heap"
	"math"
)

// target is the span Relocate fills for the class with a block of s, which
// holds live blocks: a listed span other than s holding more live blocks
// than s, or nil when there is none to be had. It is the span chosen last
// (reloc) while it qualifies, else the fullest of the candidates (cands):
// the spans with a live block that the last scan of the partial list found,
// in a heap by their live blocks. Spans other than the target only lose
// blocks to a pass, so a candidate found with fewer than its key is placed
// again by what it holds, and the first is then the fullest, as a scan
// would find it. A scan costs a load per partial span, so one per span
// filled would make a pass's cost grow with the square of the heap
// (docs/DESIGN.md, "Relocate's target, from a heap"); it runs, with the
// heap's ordering, once per as many choices as it found spans: scanBudget,
// spent by each look at the candidates, has the list scanned again then
// (new spans join it so), and Trim empties it (relocClass.forget).
// Called with mu held.
func (c *central) target(h *Heap, s *span, live uint32) *span {
	var cur *span
	if id := c.reloc; id != 0 {
		// An id of a span since freed may name a span of another class, or
		// none (freed spans are unlisted).
		if t := spanAt(&h.pages, id); t.listed && t.class == c.class {
			if n := t.carved - t.nfree; n > live && t != s {
				return t
			} else if n >= live {
				return nil // s is no emptier than the fullest, as of its choice
			}
			cur = t // it lost blocks since it was chosen: maybe no longer the fullest
		}
	}
	if c.scanBudget == 0 || len(c.cands) == 0 {
		c.scan(h)
	}
	c.scanBudget--
	for len(c.cands) > 0 {
		id, was := uint32(c.cands[0]), uint32(c.cands[0]>>32)
		t := spanAt(&h.pages, id)
		n := t.carved - t.nfree
		if !t.listed || t.class != c.class || n == 0 {
			c.cands.popFirst() // freed, full or emptied since the scan
			continue
		}
		if n < was {
			// A pass moved blocks out of it since the scan: placed again
			// by what it holds now, so that the first is the fullest.
			c.cands[0] = uint64(n)<<32 | uint64(id)
			heap.Fix(&c.cands, 0)
			continue
		}
		if cur != nil && n <= cur.carved-cur.nfree {
			return nil // no fuller than the target it would replace
		}
		// The target from now on, though it may be no fuller than s (no
		// move, then): so a class whose one sparse span it is reads as
		// having nothing to move (publish).
		c.cands.popFirst()
		c.reloc = id
		c.publish(&h.pages, c.class)
		if n <= live || t == s {
			return nil
		}
		return t
	}
	return nil
}

// scan fills cands from the partial list's spans with a live block, and
// sets scanBudget. Called with mu held.
func (c *central) scan(h *Heap) {
	c.cands = c.cands[:0]
	for id := c.partial; id != 0; {
		t := spanAt(&h.pages, id)
		if n := t.carved - t.nfree; n != 0 {
			c.cands = append(c.cands, uint64(n)<<32|uint64(id))
		}
		id = t.next
	}
	heap.Init(&c.cands)
	c.scanBudget = uint32(min(uint64(max(len(c.cands), 1)), math.MaxUint32))
}
