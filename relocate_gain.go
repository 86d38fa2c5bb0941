package offheap

// RelocateGain: what a defragmentation pass would give back, read from the
// central lists before the pass is run, so that a program runs one when it
// pays (docs/storing-values.md, "When to run a pass").

import "slices"

// Gain is what a RelocateAll pass over every live block of a heap would
// give back, as RelocateGain estimates it: the spans it would empty and the
// blocks it would move to empty them, in total and per size class.
type Gain struct {
	Bytes uint64      // bytes of the spans the pass would empty
	Moves uint64      // blocks the pass would move
	Spans int         // spans the pass would empty
	Class []ClassGain // the classes with a span to empty, smallest first
}

// ClassGain is Gain for one size class. A value of n bytes from Alloc is of
// this class when Min <= n <= Size, so that a pass can offer RelocateAll only
// the values of the classes whose gain is worth their moves.
type ClassGain struct {
	Min, Size int    // the class's request sizes: Size is its block size
	Bytes     uint64 // bytes of the class's spans the pass would empty
	Moves     uint64 // blocks of the class the pass would move
	Spans     int    // spans of the class the pass would empty
}

// RelocateGain returns what a RelocateAll pass offered every live block
// would give back: the bytes of the spans it would empty and the moves
// that would take, the most a pass can give back. Gain.Bytes against
// Stats.InUseBytes says whether a pass pays, Bytes over Moves whether a
// class's moves do. Freed blocks a magazine, depot or Local holds count as
// live: call Trim first. A checked or closed heap reports no gain. It is
// safe for concurrent use; it takes each class's lock only to read the
// spans of a class with a block to move.

func (h *Heap) RelocateGain() Gain {
	var g Gain
	if h.checked() || !h.enter() {
		return g
	}
	defer h.exit()
	var live []uint32
	for c := 1; c < numClasses; c++ {
		cen := &h.central[c]
		if !cen.movable.Load() {
			continue // no sparse span with a fuller one to fill
		}
		live = cen.spanLives(h, live[:0])
		spans, moves := drainPlan(live, classBlocks[c])
		if spans == 0 {
			continue
		}
		cg := ClassGain{Min: int(classSize[c-1]) + 1, Size: int(classSize[c]), Moves: moves, Spans: spans}
		cg.Bytes = uint64(spans) * uint64(classPages[c]) * pageSize
		g.Bytes += cg.Bytes
		g.Moves += moves
		g.Spans += spans
		g.Class = append(g.Class, cg)
	}
	return g
}

// spanLives appends to live the live blocks of each of the class's listed
// spans that holds one (the spans a pass moves blocks out of and into),
// read under mu.
func (c *central) spanLives(h *Heap, live []uint32) []uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed.Load() {
		return live
	}
	for id := c.partial; id != 0; {
		s := spanAt(&h.pages, id)
		if n := s.carved - s.nfree; n != 0 {
			live = append(live, n)
		}
		id = s.next
	}
	return live
}

// drainPlan is a pass over spans of blocks blocks each, live[i] of them
// live, that empties the emptiest sparse span into the fullest span with
// room, as relocate moves a block (a span at most half full, into a span
// fuller than it), until no span is left to empty or to fill: how many
// spans it empties and how many blocks it moves. It sorts live.
func drainPlan(live []uint32, blocks uint32) (spans int, moves uint64) {
	slices.Sort(live)
	lo, hi := 0, len(live)-1
	if hi < 1 {
		return 0, 0
	}
	full := live[hi] // the target's live blocks
	for lo < hi {
		src := live[lo]
		if !sparseSpan(src, blocks) || full <= src {
			break // the emptiest left is not sparse, or no span is fuller
		}
		k := min(src, blocks-full)
		moves += uint64(k)
		full += k
		if live[lo] -= k; live[lo] == 0 {
			spans++
			lo++
		}
		if full == blocks { // the target filled: the next fullest takes over
			if hi--; hi <= lo {
				break
			}
			full = live[hi]
		}
	}
	return spans, moves
}
