package offheap

import (
	"errors"
	"sync"
	"testing"
)

// TestLimitReclaim: under a Limit, memory the heap keeps free (magazines,
// depots, spans, dirty pages) does not make an allocation fail: once
// everything is freed, nearly the whole limit can be had in one block.
func TestLimitReclaim(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			const limit = 8 << 20
			h := newTestHeap(t, Options{Limit: limit, MagazineDepth: arm.opts.MagazineDepth})
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					var live [][]byte
					for i := range 400 {
						n := 16 << ((g + i) % 12) // 16 B to 32 KiB
						b, err := h.TryAlloc(n)
						if err != nil {
							break // the limit: fine, this is only filling
						}
						live = append(live, b)
					}
					for _, b := range live {
						h.Free(b)
					}
				})
			}
			wg.Wait()
			b, err := h.TryAlloc(7 << 20)
			if err != nil {
				t.Fatalf("TryAlloc(7 MiB) under an 8 MiB limit with nothing live: %v\n%v", err, h.Stats())
			}
			h.Free(b)
		})
	}
}

// TestLimitReclaimBounded: a heap that is full pays for a reclaim only when
// one could help: not when the live blocks alone leave no room, and not
// again until something is freed after a reclaim that did not help. A
// reclaim shows as empty magazines.
func TestLimitReclaimBounded(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode's own retry empties the calling P's magazine on every refused allocation (checker.alloc), so magazines cannot show a reclaim")
	}
	const limit = 8 << 20
	h := newTestHeap(t, Options{Limit: limit, ProfileBytes: -1})
	// Fragmentation: one 64-byte block kept in each span, 70% of the
	// limit mapped and nearly none of it live.
	c := sizeClass(64)
	per := int(classBlocks[c])
	spans := limit * 7 / 10 / (int(classPages[c]) * pageSize)
	var keep, drop [][]byte
	for i := range spans * per {
		b, err := h.TryAlloc(64)
		if err != nil {
			t.Fatalf("setup: %v", err)
		}
		if i%per == 0 {
			keep = append(keep, b)
		} else {
			drop = append(drop, b)
		}
	}
	for _, b := range drop {
		h.Free(b)
	}
	cached := func() uint64 { return h.Stats().MagazineBytes }
	refill := func() (bs [][]byte) {
		// A magazine refill: blocks cached, nothing freed. A goroutine
		// that moves to a P without a magazine between the refill's two
		// pins hands the batch back to the central list: then again.
		for cached() == 0 {
			if len(bs) == 100 {
				t.Fatal("setup: no blocks in magazines after 100 refills")
			}
			bs = append(bs, h.Alloc(100))
		}
		return bs
	}
	free := func(bs [][]byte) {
		for _, b := range bs {
			h.Free(b)
		}
	}
	tooBig := func(what string) {
		t.Helper()
		if _, err := h.TryAlloc(4 << 20); !errors.Is(err, ErrLimit) {
			t.Fatalf("%s: TryAlloc(4 MiB) in a fragmented heap: %v, want ErrLimit", what, err)
		}
	}

	tooBig("first") // a reclaim, which does not help
	bs := refill()
	tooBig("nothing freed since")
	if cached() == 0 {
		t.Fatal("a refused allocation reclaimed again although nothing was freed since a reclaim that did not help")
	}
	free(bs)
	tooBig("after a Free")
	if c := cached(); c != 0 {
		t.Fatalf("after a Free, a refused allocation did not reclaim: %d bytes still in magazines", c)
	}

	// The live blocks alone leave no room: no reclaim at all, though
	// something was freed.
	bs = refill()
	h.Free(h.Alloc(200))
	if _, err := h.TryAlloc(limit); !errors.Is(err, ErrLimit) {
		t.Fatalf("TryAlloc of the whole limit with blocks live: %v", err)
	}
	if cached() == 0 {
		t.Fatal("a reclaim for an allocation that the live blocks alone leave no room for")
	}
	free(bs)
	for _, b := range keep {
		h.Free(b)
	}
}
