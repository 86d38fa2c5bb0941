package offheap

import (
	"sync"
	"testing"
)

// TestArenaLanes checks that after Reset each lane takes back the chunks it
// used, so a P refills from memory its own cache last held, and takes
// another lane's spares before a new chunk.
func TestArenaLanes(t *testing.T) {
	h := newTestHeap(t, Options{})
	if h.chk != nil {
		t.Skip("a checked heap's Reset gives its chunks back: no spares to take")
	}
	a := h.NewArena()
	defer a.Release()
	if len(a.lanes) < 2 {
		a.lanes, a.spareGen = make([]arenaLane, 2), make([][]*arenaChunk, 2)
	}
	first := func(lane int) uintptr {
		_, _, c, err := a.claim(lane, arenaSub, arenaSub)
		if err != nil {
			t.Fatal(err)
		}
		return c.base
	}
	b0, b1 := first(0), first(1)
	if b0 == b1 {
		t.Fatal("two lanes share a chunk")
	}
	held := a.Stats().HeldBytes
	a.Reset()
	// Lane 1 claims first: it must get its own chunk back, not lane 0's.
	if got := first(1); got != b1 {
		t.Errorf("after Reset lane 1 got chunk %#x, want its own %#x (lane 0's is %#x)", got, b1, b0)
	}
	if got := first(0); got != b0 {
		t.Errorf("after Reset lane 0 got chunk %#x, want its own %#x", got, b0)
	}
	a.Reset()
	// One lane alone uses both lanes' spares before taking a new chunk.
	first(0)
	a.lanes[0].cur.Load().off.Store(a.lanes[0].cur.Load().size) // exhausted
	if got := first(0); got != b1 {
		t.Errorf("lane 0 took chunk %#x, want lane 1's spare %#x", got, b1)
	}
	if a.Stats().HeldBytes != held {
		t.Errorf("held %d bytes, want %d: a new chunk while spares were left", a.Stats().HeldBytes, held)
	}
}

// TestArenaPeakAllocBytes checks the high-water mark over rounds of
// different sizes filled by several goroutines: it is the largest round's
// bytes, during the round and after Resets and Release.
func TestArenaPeakAllocBytes(t *testing.T) {
	h := newTestHeap(t, Options{})
	a := h.NewArena()
	round := func(per int) uint64 {
		var r recorder
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range per {
					r.add(t, a.Alloc(1+(i*37+w)%3000))
				}
			})
		}
		wg.Wait()
		r.check(t)
		return r.bytes()
	}
	check := func(when string, want uint64) {
		t.Helper()
		if got := a.Stats().PeakAllocBytes; got != want {
			t.Errorf("%s: PeakAllocBytes = %d, want %d", when, got, want)
		}
	}
	check("new arena", 0)
	mid := round(200)
	check("during the first round", mid)
	a.Reset()
	check("after its Reset", mid)
	small := round(50)
	if small >= mid {
		t.Fatalf("the small round took %d bytes, not fewer than %d", small, mid)
	}
	check("during a smaller round", mid)
	a.Reset()
	big := round(400)
	check("during a bigger round", big)
	a.Reset()
	check("after its Reset", big)
	a.Release()
	check("after Release", big)
}
