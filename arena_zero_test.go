package offheap

import (
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestArenaZeroesEveryRound: memory handed out after Reset, which the round
// before dirtied, comes zeroed.
func TestArenaZeroesEveryRound(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := newArena(h, arenaChunkMin, false)
	for round := range 3 {
		var r recorder
		for i := range 3000 {
			r.add(t, a.Alloc(1+(i*round)%600)) // checks zero, then dirties
		}
		r.add(t, a.Alloc(9000))
		r.check(t)
		a.Reset()
	}
	a.Release()
}

// TestArenaAllocUnzeroed: AllocUnzeroed and Alloc mixed over several
// rounds hand out distinct, aligned memory that the census counts; Alloc's
// is zero even where the round before wrote through AllocUnzeroed, and an
// AllocUnzeroed above 512 bytes is not cleared: a chunk of its own, reused
// after Reset, still holds the last round's bytes.
func TestArenaAllocUnzeroed(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := newArena(h, arenaChunkMin, false)
	defer a.Release()
	for round := range 3 {
		var r recorder
		for i := range 3000 {
			n := 1 + (i*(round+1)*37)%3000
			if i%2 == 0 {
				r.add(t, a.Alloc(n)) // checks zero, then dirties
				continue
			}
			b := a.AllocUnzeroed(n)
			if len(b) != n || cap(b) != n {
				t.Fatalf("AllocUnzeroed(%d): len %d, cap %d", n, len(b), cap(b))
			}
			clear(b) // what the caller writes
			r.add(t, b)
		}
		// A chunk of its own (bigMin is a quarter of 64 KiB), which a fast
		// heap's Reset keeps for the next round and a checked one's gives
		// back.
		big := a.AllocUnzeroed(20000)
		if round > 0 && !h.opts.Checked && big[100] == 0 {
			t.Errorf("round %d: AllocUnzeroed(20000) reused a chunk of its own and cleared it", round)
		}
		for i := range big {
			big[i] = 0xA5
		}
		r.check(t)
		if got, want := a.Stats().AllocBytes, r.bytes()+uint64(pageheap.AlignUp(20000, arenaAlign)); got != want {
			t.Errorf("round %d: Stats().AllocBytes = %d, want %d", round, got, want)
		}
		a.Reset()
	}
}

func TestArenaTyped(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	defer a.Release()
	type point struct{ X, Y float64 }
	var _ Allocator = a
	p := New[point](a)
	if *p != (point{}) {
		t.Fatalf("New: %+v, want zero", *p)
	}
	p.X, p.Y = 1, 2
	s := MakeSlice[int64](a, 1000)
	if len(s) != 1000 || cap(s) != 1000 {
		t.Fatalf("MakeSlice: len %d cap %d", len(s), cap(s))
	}
	for i := range s {
		if s[i] != 0 {
			t.Fatalf("MakeSlice: s[%d] = %d, want 0", i, s[i])
		}
		s[i] = int64(i)
	}
	if *p != (point{1, 2}) || s[999] != 999 {
		t.Fatal("typed allocations overwrote each other")
	}
}
