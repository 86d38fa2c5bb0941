package offheap

import (
	"fmt"
	"strings"
	"testing"
)

// TestLocalFreeRefuses: Local.Free refuses foreign blocks as Heap.Free
// does, with the same message, and leaves the heap intact: Go memory,
// another heap's block, an address inside a block, an arena's memory, and
// a double free wherever the first Free left the block (the Local's stack,
// another Local's, a magazine, a depot batch).
func TestLocalFreeRefuses(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			other := newTestHeap(t, unprofiled(Options{}))
			c := h.NewLocal()
			defer c.Close()
			a := h.NewArena()
			defer a.Release()
			for _, n := range []int{8, 16, 64, 1000, 20000, 40000, maxSmall, maxSmall + 1} {
				b := c.Alloc(n)
				cases := map[string][]byte{
					"Go memory":            make([]byte, n),
					"another heap's block": other.Alloc(n),
					"an arena's memory":    a.Alloc(n),
				}
				if n > 8 {
					cases["inside a block"] = b[8:]
				}
				for what, x := range cases {
					want := sharedPanic(func() { h.Free(x) })
					got := sharedPanic(func() { c.Free(x) })
					if want == "" || stripAddrs(got) != stripAddrs(want) {
						t.Errorf("n=%d, %s: Local.Free panicked %q, Heap.Free %q", n, what, got, want)
					}
				}
				c.Free(b)
				if n == 8 || n > maxSmall {
					continue // no key: fast mode does not see it (doublefree.go)
				}
				wantDoubleFree(t, h, fmt.Sprintf("n=%d, in the Local", n), addrOf(b), n, func() { c.Free(b) })
				wantDoubleFree(t, h, fmt.Sprintf("n=%d, in the Local, by the heap", n), addrOf(b), n, func() { h.Free(b) })
				d := h.NewLocal()
				wantDoubleFree(t, h, fmt.Sprintf("n=%d, in the Local, by another Local", n), addrOf(b), n, func() { d.Free(b) })
				d.Close()
				b = h.Alloc(n)
				h.Free(b)
				wantDoubleFree(t, h, fmt.Sprintf("n=%d, in the heap, by the Local", n), addrOf(b), n, func() { c.Free(b) })
			}
			// Intact: every block handed out once.
			var blocks [][]byte
			for i := range 3 * maxDepth {
				blocks = append(blocks, c.Alloc(16+i%2000))
			}
			for range 3 * maxDepth {
				blocks = append(blocks, h.Alloc(64))
			}
			distinct(t, "after the refused Frees", blocks)
			for _, b := range blocks {
				c.Free(b)
			}
		})
	}
}

// TestLocalFreeShortCap: a slice of a block with a smaller capacity than
// the block's, whose capacity names a smaller class, frees the block its
// start is, as Heap.Free does; a second Free of it is a double free.
func TestLocalFreeShortCap(t *testing.T) {
	skipChecked(t)
	h := newTestHeap(t, unprofiled(Options{}))
	c := h.NewLocal()
	defer c.Close()
	for _, n := range []int{16, 64, 1000, 20000} {
		b := c.Alloc(n)
		before := h.Stats()
		c.Free(b[:1:1])
		if s := h.Stats(); s.Frees != before.Frees+1 || s.LiveBlocks != before.LiveBlocks-1 {
			t.Fatalf("n=%d: Free(b[:1:1]) counted %d frees, %d live blocks; before %d, %d", n, s.Frees, s.LiveBlocks, before.Frees, before.LiveBlocks)
		}
		wantDoubleFree(t, h, fmt.Sprintf("n=%d, freed with a short capacity", n), addrOf(b), n, func() { c.Free(b) })
	}
}

// stripAddrs drops the hexadecimal addresses from a message, which differ
// between two refusals of different blocks.
func stripAddrs(msg string) string {
	f := strings.Fields(msg)
	for i, w := range f {
		if strings.HasPrefix(strings.Trim(w, "(),:"), "0x") {
			f[i] = "ADDR"
		}
	}
	return strings.Join(f, " ")
}
