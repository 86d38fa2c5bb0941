package offheap

import "testing"

// censusArms are the heaps the census is tested on.
var censusArms = []struct {
	name string
	opts Options
}{
	{"fast", Options{}},
	{"nomag", Options{MagazineDepth: -1}},
	{"checked", Options{Checked: true}},
}

// TestLiveBlocks: LiveBlocks counts every kind of block, small and large,
// an Arena's chunks and a Shared's block, drops to 0 when all are freed,
// and never wraps when a snapshot counts a Free before its Alloc.
func TestLiveBlocks(t *testing.T) {
	for _, arm := range censusArms {
		h := newTestHeap(t, arm.opts)
		var bs [][]byte
		for _, n := range []int{1, 100, 5000, maxSmall, maxSmall + 1, 1 << 20} {
			bs = append(bs, h.Alloc(n))
		}
		if got := h.Stats().LiveBlocks; got != 6 {
			t.Fatalf("%s: %d live blocks, want 6", arm.name, got)
		}
		a := h.NewArena()
		a.Alloc(10)
		sh := h.NewShared(10)
		if got := h.Stats().LiveBlocks; got <= 7 {
			t.Fatalf("%s: %d live blocks with an Arena and a Shared, want more than 7", arm.name, got)
		}
		a.Release()
		sh.Release()
		for _, b := range bs {
			h.Free(b)
		}
		if s := h.Stats(); s.LiveBlocks != 0 || s.Allocs != s.Frees {
			t.Fatalf("%s: %d live blocks after freeing all (%d allocs, %d frees)", arm.name, s.LiveBlocks, s.Allocs, s.Frees)
		}
	}
	if got := liveBlocks(5, 7); got != 0 {
		t.Fatalf("liveBlocks(5 allocs, 7 frees) = %d, want 0", got)
	}
	if got := liveBlocks(7, 5); got != 2 {
		t.Fatalf("liveBlocks(7, 5) = %d", got)
	}
}
