package offheap

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRefusalsAgree: Free, Realloc, Relocate and RelocateAll refuse the
// same addresses, for the same reason, since they take one decision
// (freeable): a freed block, a freed sampled block (ProfileBytes 1 samples
// every block, and a freed sample's run waits in the profile's stash with
// its pagemap word unchanged), a freed large block, Go memory, an interior
// address, an address inside a large block, Arena memory and a Shared's
// bytes (of a small block or a large one). Each refusal leaves the heap as
// it was: the live blocks, and no freed block handed out twice. Before the
// fix, with ProfileBytes 1, a second Free and a Realloc panicked as double
// frees, but Relocate returned the freed block and RelocateAll took it.
func TestRefusalsAgree(t *testing.T) {
	if buildChecked {
		t.Skip("fast mode's decision: every heap is checked under the offheapchecked tag")
	}
	for _, arm := range []struct {
		name string
		opts Options
	}{
		{"fast", Options{ProfileBytes: -1}},
		{"profiled", Options{ProfileBytes: 1}},
		{"profiled-nomag", Options{ProfileBytes: 1, MagazineDepth: -1}},
	} {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			ar := h.NewArena()
			defer ar.Release()
			sh, shBig := h.NewShared(100), h.NewShared(maxSmall+10)
			defer sh.Release()
			defer shBig.Release()
			live, big, arenaMem := h.Alloc(100), h.Alloc(maxSmall+10), ar.Alloc(100)
			copy(live, "live")
			// A class with something to move, so that Relocate's dense
			// check sends the freed small block on (it returns a freed
			// block of a class with nothing to move as it is: its doc).
			defer freeAll(h, movableClass(h, 100))
			freed, freedBig := h.Alloc(100), h.Alloc(maxSmall+10)
			h.Free(freed)
			h.Free(freedBig)
			if arm.opts.ProfileBytes < 0 {
				h.Trim() // the freed block back on its span's free list
			} else if !h.prof.kept(addrOf(freed)) {
				t.Fatal("the freed sample is not in the profile's stash: the case this test is for")
			}
			cases := []struct {
				what, want string
				b          []byte
			}{
				{"a freed block", "already free", freed},
				{"a freed large block", "already free", freedBig},
				{"Go memory", "did not allocate", make([]byte, 100)},
				{"an interior slice", "not the start of a block", live[16:]},
				{"inside a large block", "not the start of a block", big[pageSize:]},
				{"an arena's memory", "belongs to an Arena", arenaMem},
				{"a Shared's bytes", "bytes of a Shared", sh.Bytes()},
				{"a large Shared's bytes", "bytes of a Shared", shBig.Bytes()},
			}
			s0 := h.Stats()
			for _, c := range cases {
				for _, op := range []struct {
					name string
					f    func()
				}{
					{"Free", func() { h.Free(c.b) }},
					{"Realloc", func() { h.Realloc(c.b, 10) }},
					{"Relocate", func() { h.Relocate(c.b) }},
					{"RelocateAll", func() { h.RelocateAll([][]byte{c.b}) }},
				} {
					msg := sharedPanic(op.f)
					if !strings.HasPrefix(msg, "offheap: ") || !strings.Contains(msg, c.want) {
						t.Errorf("%s of %s: panic %q, want one that says %q", op.name, c.what, msg, c.want)
					}
				}
			}
			if s := h.Stats(); s.LiveBlocks != s0.LiveBlocks || s.InUseBytes != s0.InUseBytes || s.Allocs != s0.Allocs ||
				s.Frees != s0.Frees || s.Relocations != 0 {
				t.Errorf("the refusals changed the census: %+v, then %+v", s0, s)
			}
			// Nothing was handed out twice: the next blocks of both sizes
			// are distinct from each other and from the live ones.
			blocks := [][]byte{live, big}
			for range 4 {
				blocks = append(blocks, h.Alloc(100), h.Alloc(maxSmall+10))
			}
			distinct(t, "after the refusals", blocks)
			if string(live[:4]) != "live" {
				t.Errorf("the live block holds %q", live[:4])
			}
			for _, b := range blocks {
				h.Free(b)
			}
		})
	}
}

// TestRelocateCheckedAtLimit: a checked Relocate (and RelocateAll) that
// cannot get memory for the new block returns b untouched, as a fast
// heap's Relocate, which takes no new memory, does. Before the fix it
// panicked "offheap: heap limit reached".
func TestRelocateCheckedAtLimit(t *testing.T) {
	h := checkedHeap(t, Options{Limit: 4 << 20})
	const n = 1000
	var bs [][]byte
	for {
		b, err := h.TryAlloc(n)
		if errors.Is(err, ErrLimit) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		copy(b, fmt.Sprint(len(bs)))
		bs = append(bs, b)
	}
	if len(bs) < 16 {
		t.Fatalf("%d blocks under the Limit", len(bs))
	}
	s0 := h.Stats()
	for i, b := range bs[:8] {
		nb, moved := h.Relocate(b)
		if moved || addrOf(nb) != addrOf(b) || len(nb) != len(b) || cap(nb) != cap(b) {
			t.Fatalf("Relocate of block %d at the Limit: moved %v, %#x (%d, %d), want b (%#x)", i, moved, addrOf(nb), len(nb), cap(nb), addrOf(b))
		}
	}
	batch := append([][]byte(nil), bs[8:16]...)
	if moved := h.RelocateAll(batch); moved != 0 {
		t.Fatalf("RelocateAll at the Limit moved %d", moved)
	}
	for i, b := range bs {
		if want := fmt.Sprint(i); string(b[:len(want)]) != want || i >= 8 && i < 16 && addrOf(batch[i-8]) != addrOf(b) {
			t.Fatalf("block %d changed: %q", i, b[:len(want)])
		}
	}
	if s := h.Stats(); s.LiveBlocks != s0.LiveBlocks || s.InUseBytes != s0.InUseBytes || s.Relocations != s0.Relocations {
		t.Errorf("Relocate at the Limit changed the census: %+v, then %+v", s0, s)
	}
	for _, b := range bs {
		h.Free(b)
	}
}

// TestRelocateRefuses: Relocate panics as Free does for what Free refuses
// (Go memory, an interior address, Arena memory, a Shared's bytes, a freed
// block, a slice longer than its block) and leaves the heap as it was: a
// census that still holds, and the block still Free's.
func TestRelocateRefuses(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			a := h.NewArena()
			defer a.Release()
			sh := h.NewShared(100)
			defer sh.Release()
			b := h.Alloc(100)
			big := h.Alloc(maxSmall + 10)
			// Each case's class with something to move (spans a quarter
			// full): where nothing can, Relocate reads the pagemap and not
			// the block, and a freed block comes back as it is.
			for _, n := range []int{100, cap(b) - 16, cap(sh.Bytes())} {
				defer freeAll(h, movableClass(h, n))
			}
			freed := h.Alloc(100)
			h.Free(freed)
			h.Trim() // back in its span, which the refill left sparse again
			// Slices longer than any small block: a checked heap looked at
			// none of them before its fix, and kept them as they were.
			huge, freedHuge := h.Alloc(3*maxSmall), h.Alloc(3*maxSmall)
			defer h.Free(huge)
			h.Free(freedHuge)
			cases := map[string]struct {
				b    []byte
				want string
			}{
				"Go memory":                  {make([]byte, 100), "did not allocate"},
				"an interior slice":          {b[16:], "not the start of a block"},
				"an arena's memory":          {a.Alloc(100), "Arena"},
				"a Shared's bytes":           {sh.Bytes(), "Shared"},
				"a freed block":              {freed, "free"},
				"inside a large":             {big[pageSize : pageSize+100 : pageSize+100], "not"},
				"inside a large, to its end": {huge[pageSize:], "not the start of a block"},
				"a freed large block":        {freedHuge, "free"},
			}
			s0 := h.Stats()
			for what, c := range cases {
				msg := mustPanic(t, func() { h.Relocate(c.b) })
				if !strings.Contains(msg, c.want) {
					t.Errorf("%s: %q, want it to say %q", what, msg, c.want)
				}
			}
			// Checked mode allocates the new block first, and frees it
			// when Free refuses b, as Realloc does.
			if s := h.Stats(); s.LiveBlocks != s0.LiveBlocks || s.InUseBytes != s0.InUseBytes || s.Relocations != 0 ||
				h.chk == nil && (s.Allocs != s0.Allocs || s.Frees != s0.Frees) {
				t.Errorf("a refused Relocate counted: %v, then %v", s0, s)
			}
			h.Free(b)
			h.Free(big)
		})
	}
}

// movableClass leaves n bytes' class with spans a quarter full, for a
// Relocate of it to look at its block, and returns the blocks it keeps.
func movableClass(h *Heap, n int) (keep [][]byte) {
	var rest [][]byte
	for i := range 3 * classBlocks[sizeClass(n)] {
		if x := h.Alloc(n); i%4 == 0 {
			keep = append(keep, x)
		} else {
			rest = append(rest, x)
		}
	}
	freeAll(h, rest)
	return keep
}
