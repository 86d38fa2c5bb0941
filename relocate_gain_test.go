package offheap

import (
	"math/rand/v2"
	"testing"
)

// gainHeap fills h with n values of 16-512 B, then frees all but one in
// keepOneIn of them at random, Trims, and returns the survivors.
func gainHeap(h *Heap, n, keepOneIn int, rng *rand.Rand) [][]byte {
	var keep [][]byte
	all := make([][]byte, n)
	for i := range all {
		all[i] = h.Alloc(16 + rng.IntN(497))
	}
	for _, b := range all {
		if rng.IntN(keepOneIn) == 0 {
			keep = append(keep, b)
		} else {
			h.Free(b)
		}
	}
	h.Trim()
	return keep
}

// TestRelocateGainFragmented: after an eviction of 90% at random, the gain
// is most of the mapped memory, and a RelocateAll pass over the survivors,
// followed by a Trim, gives back what the gain said, within 10% (the pass
// offers the blocks in their order, not the emptiest span's first, and a
// span whose blocks come after its class's room filled stays), in as many
// moves, within 10%. Positive control: the same figures on the heap before
// its eviction are not close (TestRelocateGainCompact).
func TestRelocateGainFragmented(t *testing.T) {
	if buildChecked {
		t.Skip("checked build: a pass gives nothing back")
	}
	for _, opts := range []Options{{}, {MagazineDepth: -1}} {
		h := newTestHeap(t, unprofiled(opts))
		keep := gainHeap(h, 100_000, 10, rand.New(rand.NewPCG(1, 2)))
		before := h.Stats()
		g := h.RelocateGain()
		if g.Bytes < before.MappedBytes/2 || g.Spans == 0 || g.Moves == 0 {
			t.Fatalf("depth %d: gain %d bytes (%d spans, %d moves) of %d mapped, %d in use: want at least half the mapped",
				opts.MagazineDepth, g.Bytes, g.Spans, g.Moves, before.MappedBytes, before.InUseBytes)
		}
		var sum ClassGain
		for _, c := range g.Class {
			if c.Min > c.Size || c.Bytes == 0 || c.Spans == 0 {
				t.Fatalf("class %+v: want Min <= Size and a span to empty", c)
			}
			sum.Bytes += c.Bytes
			sum.Moves += c.Moves
			sum.Spans += c.Spans
		}
		if sum.Bytes != g.Bytes || sum.Moves != g.Moves || sum.Spans != g.Spans {
			t.Fatalf("classes sum to %+v, total %+v", sum, g)
		}
		moved := h.RelocateAll(keep)
		h.Trim()
		after := h.Stats()
		freed := before.MappedBytes - after.MappedBytes
		if !within(freed, g.Bytes, 0.10) || !within(uint64(moved), g.Moves, 0.10) {
			t.Fatalf("depth %d: the pass freed %d bytes in %d moves; the gain said %d in %d (10%% either way)",
				opts.MagazineDepth, freed, moved, g.Bytes, g.Moves)
		}
		if rest := h.RelocateGain(); rest.Bytes > g.Bytes/20 {
			t.Fatalf("depth %d: after the pass the gain is %d bytes, of %d before: want at most a 20th", opts.MagazineDepth, rest.Bytes, g.Bytes)
		}
		for _, b := range keep {
			h.Free(b)
		}
	}
}

// TestRelocateGainCompact: a heap whose values are all live, allocated
// with magazines off, so that each class carves one span at a time, reports
// no gain (with magazines, the spans each P's magazine was carving, given
// back part-used by Trim, are a pass's to empty); a closed heap, a zero
// Gain.
func TestRelocateGainCompact(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{MagazineDepth: -1}))
	gainHeap(h, 100_000, 1, rand.New(rand.NewPCG(3, 4)))
	if g := h.RelocateGain(); g.Bytes != 0 || g.Moves != 0 || g.Class != nil {
		t.Fatalf("all live: gain %+v, want none", g)
	}
	h.Close()
	if g := h.RelocateGain(); g.Bytes != 0 || g.Class != nil {
		t.Fatalf("closed heap: gain %+v", g)
	}
}

// TestDrainPlan: the plan empties the emptiest sparse spans into the
// fullest, stops at a span more than half full or when no span is fuller,
// and moves each emptied span's blocks once.
func TestDrainPlan(t *testing.T) {
	for _, c := range []struct {
		live   []uint32
		blocks uint32
		spans  int
		moves  uint64
	}{
		{nil, 10, 0, 0},
		{[]uint32{1}, 10, 0, 0},                // one span: nowhere to go
		{[]uint32{1, 1}, 10, 0, 0},             // none fuller
		{[]uint32{1, 2}, 10, 1, 1},             // one into the other
		{[]uint32{6, 7}, 10, 0, 0},             // neither sparse
		{[]uint32{3, 9}, 10, 0, 1},             // too little room: 1 of 3 moves, no span empties
		{[]uint32{2, 2, 9, 8}, 10, 1, 3},       // the 9 fills, the 8 takes the rest of one 2 and half the other
		{[]uint32{5, 1, 1, 1, 1, 1}, 10, 5, 5}, // all into the 5
	} {
		live := append([]uint32(nil), c.live...)
		spans, moves := drainPlan(live, c.blocks)
		if spans != c.spans || moves != c.moves {
			t.Errorf("drainPlan(%v, %d) = %d spans, %d moves; want %d, %d", c.live, c.blocks, spans, moves, c.spans, c.moves)
		}
	}
}

// within reports whether got is within frac of want, either way.
func within(got, want uint64, frac float64) bool {
	d := float64(got) - float64(want)
	return d <= frac*float64(want) && -d <= frac*float64(want)
}
