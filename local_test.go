package offheap

import (
	"errors"
	"fmt"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestLocalCensus: every Alloc and Free through a Local is counted once,
// as LocalHits where its stack served it, and Stats's identity and per-class
// counts hold while the Local is open, after Flush, after Close and after
// the heap's Close; InUse agrees with Stats.
func TestLocalCensus(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			c := h.NewLocal()
			var want census
			var live [][]byte
			sizes := testSizes()
			for round := range 3 {
				for i, n := range sizes {
					var b []byte
					if i%2 == 0 {
						b = c.Alloc(n)
					} else {
						b = c.AllocUnzeroed(n)
					}
					want.allocs++
					if n > maxSmall {
						want.large++
					}
					live = append(live, b)
				}
				for i, b := range live {
					if i%3 == round%3 {
						h.Free(b) // a Local's block, freed by the heap
					} else {
						c.Free(b)
					}
					want.frees++
				}
				live = live[:0]
				check := func(when string) {
					t.Helper()
					s := h.Stats()
					if err := checkCensusOf(h, s, want); err != nil {
						t.Fatalf("round %d, %s: %v", round, when, err)
					}
					if bytes, blocks := h.InUse(); bytes != s.InUseBytes || blocks != s.LiveBlocks {
						t.Fatalf("round %d, %s: InUse %d bytes, %d blocks; Stats %d, %d", round, when, bytes, blocks, s.InUseBytes, s.LiveBlocks)
					}
					checked := h.checked()
					if !checked && s.LocalHits == 0 && round > 0 {
						t.Fatalf("round %d, %s: no LocalHits in a fast or sampled heap: %v", round, when, s)
					}
					if checked && (s.LocalHits != 0 || s.LocalBytes != 0) {
						t.Fatalf("round %d, %s: a checked heap's Local held blocks: %v", round, when, s)
					}
				}
				check("open")
				if round == 1 {
					c.Flush()
					check("flushed")
					if s := h.Stats(); s.LocalBytes != 0 {
						t.Fatalf("LocalBytes %d after Flush", s.LocalBytes)
					}
				}
			}
			hits := h.Stats().LocalHits
			c.Close()
			s := h.Stats()
			if err := checkCensusOf(h, s, want); err != nil {
				t.Fatalf("after the Local's Close: %v", err)
			}
			if s.LocalHits != hits || s.LocalBytes != 0 {
				t.Fatalf("after the Local's Close: LocalHits %d (was %d), LocalBytes %d", s.LocalHits, hits, s.LocalBytes)
			}
			// A new Local takes the closed one's state, and its census
			// goes on from there.
			c = h.NewLocal()
			c.Free(c.Alloc(64))
			c.Free(c.Alloc(64))
			want.allocs += 2
			want.frees += 2
			if err := checkCensusOf(h, h.Stats(), want); err != nil {
				t.Fatalf("a second Local: %v", err)
			}
			hits = h.Stats().LocalHits
			h.Close()
			if err := checkCensusOf(h, h.Stats(), want); err != nil {
				t.Fatalf("after the heap's Close: %v", err)
			}
			if s := h.Stats(); s.LocalHits != hits {
				t.Fatalf("after the heap's Close: LocalHits %d, was %d", s.LocalHits, hits)
			}
		})
	}
}

// checkCensusOf is checkCensus, less the count of large blocks in a heap
// with a checker: a checked block is longer than asked, a sampled one a
// page run of its own.
func checkCensusOf(h *Heap, s Stats, want census) error {
	if h.chk != nil {
		want.large = s.Large
	}
	return checkCensus(s, want)
}

// TestLocalBound: a Local that only frees holds at most cacheBound bytes,
// which is a few MiB, and hands the rest on: blocks a producer allocates
// from the heap and a consumer frees through its Local go back to the
// central lists, where the producer finds them again.
func TestLocalBound(t *testing.T) {
	skipChecked(t)
	if b := cacheBound(0); b > 4<<20 || b < 1<<20 {
		t.Fatalf("cacheBound(0) = %d bytes, want 1-4 MiB", b)
	}
	for _, depth := range []int{0, 1, MaxMagazineDepth, -1} {
		t.Run(fmt.Sprint("depth=", depth), func(t *testing.T) {
			h := newTestHeap(t, unprofiled(Options{MagazineDepth: depth}))
			c := h.NewLocal()
			defer c.Close()
			bound := uint64(cacheBound(depth))
			for _, n := range []int{8, 64, 1000, 16 << 10, cacheMax} {
				for range 4 {
					var blocks [][]byte
					for range 2 * maxDepth {
						blocks = append(blocks, h.AllocUnzeroed(n))
					}
					for _, b := range blocks {
						c.Free(b)
					}
				}
			}
			s := h.Stats()
			if s.LocalBytes > bound || s.LocalBytes == 0 {
				t.Fatalf("a Local that only frees holds %d bytes; its bound is %d", s.LocalBytes, bound)
			}
			if held := uint64(cacheHeld(c)); held != s.LocalBytes {
				t.Fatalf("LocalBytes %d, the Local's stacks hold %d", s.LocalBytes, held)
			}
		})
	}
}

// skipChecked skips a test of a Local's stacks in the offheapchecked
// build, whose Locals hold no blocks.
func skipChecked(t *testing.T) {
	if buildChecked {
		t.Skip("offheapchecked: a Local passes every call to the checked heap")
	}
}

// TestLocalFillsItsStacks: a Local's Allocs come from its stacks once a
// refill stocked them, and its Frees go back to them: the blocks a Local
// frees are the ones it hands out next.
func TestLocalFillsItsStacks(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{}))
	c := h.NewLocal()
	defer c.Close()
	b := c.AllocUnzeroed(64)
	before := h.Stats()
	c.Free(b)
	if x := c.Alloc(64); addrOf(x) != addrOf(b) {
		t.Fatalf("the Local handed out %#x after freeing %#x", addrOf(x), addrOf(b))
	}
	if s := h.Stats(); s.LocalHits != before.LocalHits+1 || s.MagazineHits != before.MagazineHits || s.CentralHits+s.Fresh != before.CentralHits+before.Fresh {
		t.Fatalf("a Local's pop counted as %v, was %v", s, before)
	}
}

// TestLocalServesEverySize: for every size a Local holds, zeroed and
// unzeroed, a pair after the first is served by the Local's stack. Before the fix AllocUnzeroed of 8
// bytes or less refilled on every call, and dropped the stack it had.
func TestLocalServesEverySize(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{}))
	c := h.NewLocal()
	defer c.Close()
	for _, n := range []int{1, 8, 9, 16, 64, 1000, cacheMax} {
		for _, zero := range []bool{true, false} {
			alloc := c.AllocUnzeroed
			if zero {
				alloc = c.Alloc
			}
			c.Free(alloc(n))
			before := h.Stats()
			for range 10 {
				c.Free(alloc(n))
			}
			if s := h.Stats(); s.LocalHits-before.LocalHits != 10 {
				t.Errorf("n=%d, zero=%v: %d of 10 Allocs from the Local's stack (%v)", n, zero, s.LocalHits-before.LocalHits, s)
			}
		}
	}
}

// TestLocalAtLimit: at the heap's Limit, a Local's refill that the limit
// refuses gives the Local's own blocks back first, so that the heap's
// reclaim finds them: a Local holding a block of one class after another
// does not make the heap refuse what it has room for.
func TestLocalAtLimit(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{Limit: 1 << 20, ReleaseDelay: -1}))
	c := h.NewLocal()
	defer c.Close()
	noPanic(t, func() {
		for cl := 2; cl < numClasses && classSize[cl] <= 4096; cl++ {
			c.Free(c.Alloc(int(classSize[cl]))) // a span of its own per class
		}
	})
}

// TestLocalTryAlloc: a Local's TryAlloc returns the heap's errors where
// Alloc panics with them (a request over the Limit, a negative size) and
// loses nothing: every block it handed out frees, and the heap ends empty.
func TestLocalTryAlloc(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			opts := arm.opts
			opts.Limit, opts.ReleaseDelay = 4<<20, -1
			h := newTestHeap(t, unprofiled(opts))
			c := h.NewLocal()
			defer c.Close()
			if b, err := c.TryAlloc(8 << 20); !errors.Is(err, ErrLimit) || b != nil {
				t.Errorf("TryAlloc(8 MiB) under a 4 MiB Limit: %d bytes, %v; want ErrLimit", len(b), err)
			}
			if _, err := c.TryAlloc(-1); !errors.Is(err, ErrSize) {
				t.Errorf("TryAlloc(-1): %v, want ErrSize", err)
			}
			var blocks [][]byte
			for {
				b, err := c.TryAlloc(1000)
				if err != nil {
					if !errors.Is(err, ErrLimit) {
						t.Fatalf("TryAlloc(1000) after %d blocks: %v, want ErrLimit", len(blocks), err)
					}
					break
				}
				if len(b) != 1000 || b[0] != 0 || b[999] != 0 {
					t.Fatalf("TryAlloc(1000): %d bytes, not zeroed", len(b))
				}
				b[0], b[999] = 1, 1
				blocks = append(blocks, b)
			}
			want := 100
			if r := arm.opts.GuardOneIn; r > 0 {
				// Every r-th block on a guarded run of two OS pages:
				// 128 KiB of the Limit each with 64 KiB pages. Half of what
				// fits, for the quarantine's and the draw's share.
				want = min(want, int(4<<20/(2*pageheap.OSPageBytes))*r/2)
			}
			if len(blocks) < want {
				t.Errorf("%d blocks of 1000 bytes under a 4 MiB Limit, want %d at least", len(blocks), want)
			}
			for _, b := range blocks {
				c.Free(b)
			}
			c.Flush()
			if s := h.Stats(); s.LiveBlocks != 0 {
				t.Errorf("%d blocks live after every block was freed", s.LiveBlocks)
			}
		})
	}
}
