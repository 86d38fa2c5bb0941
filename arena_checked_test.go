package offheap

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestArenaChecked: on a checked heap Reset gives the chunks back, so the
// heap's poisoning catches a write through a slice kept past Reset; the
// control (no such write) closes clean.
func TestArenaChecked(t *testing.T) {
	for _, bug := range []bool{false, true} {
		h, err := NewHeap(Options{Checked: true})
		if err != nil {
			t.Skipf("checked mode not available: %v", err)
		}
		before := h.Stats().InUseBytes
		a := h.NewArena()
		var r recorder
		for i := range 1000 {
			r.add(t, a.Alloc(1+i%300))
		}
		r.check(t)
		stale := a.Alloc(64)
		a.Reset()
		if s := a.Stats(); s.Chunks != 0 || s.HeldBytes != 0 {
			t.Errorf("checked heap: after Reset the arena holds %+v, want no chunks", s)
		}
		if bug {
			stale[10] = 1 // a use after Reset
		}
		r = recorder{}
		for i := range 1000 {
			r.add(t, a.Alloc(1+i%300))
		}
		r.check(t)
		a.Release()
		if got := h.Stats().InUseBytes; got != before {
			t.Errorf("heap InUseBytes after Release = %d, want %d", got, before)
		}
		err = h.Close()
		var me *MemoryError
		switch {
		case bug && (!errors.As(err, &me) || me.Kind != WriteAfterFree):
			t.Errorf("write after Reset: Close returned %v, want a WriteAfterFree", err)
		case !bug && err != nil:
			t.Errorf("control: Close returned %v, want nil", err)
		}
	}
}

// Positive controls: the checker goes red when the arena (or the test)
// corrupts.

func TestArenaCheckerCatchesDuplicateChunk(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := newArena(h, arenaChunkMin, false)
	var r recorder
	for i := range 3000 {
		if i == 1500 {
			// The planted bug: every chunk's offset back to 0 and the
			// sub-chunks dropped, so the claims that follow hand out
			// bytes handed out before.
			a.dropSubChunks()
			for _, c := range a.chunks {
				c.off.Store(0)
				c.waste.Store(0)
			}
			for l := range a.lanes {
				if len(a.chunks) > 0 {
					a.lanes[l].cur.Store(a.chunks[0])
				}
			}
		}
		b := a.Alloc(1 + i%100)
		seed := r.seed.Add(1)
		for j := range b { // fill without the zero check, which would fire first
			b[j] = patternByte(seed, j)
		}
		r.recs = append(r.recs, arenaRec{addrOf(b), len(b), seed})
	}
	// Either finding proves the checker sees the duplicate: two records on
	// the same bytes overlap, and the later fill overwrote the earlier one.
	err := checkRecs(r.recs)
	if err == nil || !strings.Contains(err.Error(), "overlap") && !strings.Contains(err.Error(), "overwritten") {
		t.Fatalf("checker on an arena that hands out the same bytes twice: %v, want an overlap", err)
	}
	t.Logf("checker reported: %v", err)
	a.Release()
}

func TestArenaCheckerCatchesCorruption(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	var r recorder
	for i := range 100 {
		r.add(t, a.Alloc(1+i))
	}
	r.check(t)

	// A pattern written wrong.
	b := bytesAt(r.recs[50].addr, r.recs[50].n)
	b[len(b)-1] ^= 0x40
	if err := checkRecs(r.recs); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("checker after corrupting a byte: %v, want a pattern error", err)
	}
	b[len(b)-1] ^= 0x40

	// The same offset recorded twice.
	recs := append(slices.Clone(r.recs), arenaRec{r.recs[10].addr, r.recs[10].n, r.recs[10].seed + 1})
	if err := checkRecs(recs); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("checker with an offset handed out twice: %v, want an overlap", err)
	}

	// A misaligned allocation.
	recs = append(slices.Clone(r.recs), arenaRec{r.recs[10].addr + 8, 0, 0})
	if err := checkRecs(recs); err == nil || !strings.Contains(err.Error(), "aligned") {
		t.Errorf("checker with a misaligned allocation: %v, want an alignment error", err)
	}

	// Memory handed out dirty.
	d := make([]byte, 16)
	d[3] = 1
	if err := fillPattern(d, 1); err == nil {
		t.Error("fillPattern accepted dirty memory")
	}
	if err := checkRecs(r.recs); err != nil {
		t.Fatalf("checker after undoing the corruption: %v", err)
	}
}
