package offheap

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// keyWord is the second word of the block at a: where a freed block holds
// the heap's double-free key.
func keyWord(a uintptr) *uint64 {
	return (*uint64)(unsafe.Pointer(unsafe.SliceData(bytesAt(a+8, 8))))
}

// wantDoubleFree fails the test unless f panics with the double-free report
// for the block at a of n bytes: with the block size and the pointer to
// checked mode in a fast heap; the checker's own report in a checked one.
func wantDoubleFree(t *testing.T, h *Heap, what string, a uintptr, n int, f func()) {
	t.Helper()
	msg := sharedPanic(f)
	want := fmt.Sprintf("offheap: double free of %#x (", a)
	if h.chk != nil && strings.HasPrefix(msg, fmt.Sprintf("offheap: invalid free of %#x: not allocated", a)) {
		return // checked mode forgets a block once it left the quarantine
	}
	if h.chk == nil {
		want = fmt.Sprintf("offheap: double free of %#x (%d bytes)", a, classSize[sizeClass(n)])
		if !strings.Contains(msg, "Checked") {
			t.Errorf("%s: %q does not point to checked mode for the stacks", what, msg)
		}
	}
	if !strings.HasPrefix(msg, want) {
		t.Errorf("%s: panic %q, want one starting %q", what, msg, want)
	}
}

// distinct fails the test if two of the blocks start at the same address:
// the heap handed a block out twice.
func distinct(t *testing.T, what string, blocks [][]byte) {
	t.Helper()
	seen := map[uintptr]bool{}
	for _, b := range blocks {
		if seen[addrOf(b)] {
			t.Fatalf("%s: the block at %#x was handed out twice", what, addrOf(b))
		}
		seen[addrOf(b)] = true
	}
}

// TestDoubleFree: a second Free of a small block panics wherever the first
// Free left it (the magazine, a depot batch, its span's free list) and
// leaves the heap intact: the block is free once, not handed out twice.
// Before the fix fast mode took it twice, and the next two Allocs returned
// the same block.
func TestDoubleFree(t *testing.T) {
	for _, arm := range arms {
		for _, n := range []int{9, 16, 64, 1000, maxSmall} {
			t.Run(fmt.Sprintf("%s/%d", arm.name, n), func(t *testing.T) {
				h := newTestHeap(t, Options{MagazineDepth: arm.opts.MagazineDepth, ReleaseDelay: time.Hour, ProfileBytes: -1})
				many := 3*maxDepth + 10 // past a magazine and into the depot
				check := func(where string, b []byte) {
					t.Helper()
					wantDoubleFree(t, h, "double free "+where, addrOf(b), n, func() { h.Free(b) })
					var blocks [][]byte
					for range many {
						blocks = append(blocks, h.Alloc(n))
					}
					distinct(t, "after a double free "+where, blocks)
					for _, x := range blocks {
						h.Free(x)
					}
				}

				b := h.Alloc(n)
				h.Free(b)
				check("in the magazine", b)

				var blocks [][]byte
				for range many {
					blocks = append(blocks, h.Alloc(n))
				}
				for _, x := range blocks {
					h.Free(x)
				}
				check("in a depot batch", blocks[0]) // the first freed is spilled first

				// Every block back on its span: keep one of blocks[1]'s span
				// live, so that the span stays; with one block a span, the
				// span goes and the second Free finds no block at all.
				span := func(b []byte) uint64 { p, _ := h.pages.PageOf(addrOf(b)); return *h.pages.Entry(p) >> 32 }
				blocks = blocks[:0]
				var keep []byte
				for range many {
					x := h.Alloc(n)
					if keep == nil && len(blocks) > 0 && span(x) == span(blocks[0]) {
						keep = x
						continue
					}
					blocks = append(blocks, x)
				}
				for _, x := range blocks {
					h.Free(x)
				}
				h.Trim()
				if keep != nil || h.chk != nil {
					check("on its span's free list", blocks[0])
				} else if msg := sharedPanic(func() { h.Free(blocks[0]) }); !strings.Contains(msg, "not allocated") {
					t.Errorf("double free of a block whose span went back: %q", msg)
				}
				if keep != nil {
					h.Free(keep)
				}

				if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != s.Frees {
					t.Errorf("Stats after the double frees: %d bytes in use, %d allocs, %d frees", s.InUseBytes, s.Allocs, s.Frees)
				}
			})
		}
	}
}

// TestDoubleFreeKeyInData: a live block whose last word holds the key, as
// user data may, frees as usual; the exact check finds it live.
func TestDoubleFreeKeyInData(t *testing.T) {
	if buildChecked {
		t.Skip("checked heaps check every Free exactly, without a key")
	}
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			var blocks [][]byte
			for _, n := range []int{16, 64, 100, 4000, maxSmall} {
				for range 3 {
					b := h.Alloc(n)
					*keyWord(addrOf(b)) = h.key
					h.Free(b) // must not panic
					blocks = append(blocks, h.Alloc(n))
				}
			}
			distinct(t, "after freeing blocks that held the key", blocks)
			for _, b := range blocks {
				h.Free(b)
			}
			if s := h.Stats(); s.InUseBytes != 0 {
				t.Errorf("%d bytes in use", s.InUseBytes)
			}
		})
	}
}

// TestAllocClearsKey: every block Alloc and AllocUnzeroed hand out has its
// last word clear of the key, from the magazine and from a refill alike, so
// that freeing it takes the fast path.
func TestAllocClearsKey(t *testing.T) {
	if buildChecked {
		t.Skip("checked heaps write no key")
	}
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			for _, alloc := range []func(int) []byte{h.Alloc, h.AllocUnzeroed} {
				for _, n := range []int{16, 64, 100, 4000, maxSmall} {
					var blocks [][]byte
					for range 3 * maxDepth {
						blocks = append(blocks, alloc(n))
					}
					for _, b := range blocks {
						h.Free(b)
					}
					for i := range 3 * maxDepth { // the freed blocks again
						b := alloc(n)
						if *keyWord(addrOf(b)) == h.key {
							t.Fatalf("allocation %d of %d bytes handed out a block that holds the key", i, n)
						}
						blocks[i] = b
					}
					for _, b := range blocks {
						h.Free(b)
					}
				}
			}
		})
	}
}

// TestDoubleFreeCensus frees twice in every way there is, and some ways
// fast mode does not see (8-byte blocks carry no key), then checks that
// Stats still makes sense: no count wraps.
func TestDoubleFreeCensus(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			refused := func(what string, n int, f func()) {
				t.Helper()
				if msg := sharedPanic(f); !strings.HasPrefix(msg, "offheap:") {
					t.Errorf("%s after the free of %d bytes was not refused: %q", what, n, msg)
				}
			}
			for _, n := range []int{16, 64, 5000, maxSmall + 1, 1 << 20} {
				b := h.Alloc(n)
				h.Free(b)
				refused("Free", n, func() { h.Free(b) })
				refused("Free(b[:0])", n, func() { h.Free(b[:0]) })
				refused("Realloc(b, n)", n, func() { h.Realloc(b, n) })
				refused("Realloc(b, n+1)", n, func() { h.Realloc(b, n+1) })
				refused("Realloc(b, 0)", n, func() { h.Realloc(b, 0) })
				refused("ReallocUnzeroed(b, n)", n, func() { h.ReallocUnzeroed(b, n) })
				refused("ReallocUnzeroed(b, n+1)", n, func() { h.ReallocUnzeroed(b, n+1) })
				s := MakeSlice[uint64](h, n/8)
				FreeSlice(h, s)
				refused("FreeSlice", n, func() { FreeSlice(h, s) })
				p := New[[2]uint64](h)
				Free(h, p)
				refused("Free[T]", 16, func() { Free(h, p) })
			}
			sh := h.NewShared(10)
			sh.Release()
			refused("Shared.Release", 10, sh.Release)
			if !buildChecked {
				// An 8-byte block's double free goes unseen in fast mode:
				// its Frees outnumber its Allocs.
				b := h.Alloc(8)
				h.Free(b)
				if h.chk == nil {
					h.Free(b)
				}
			}
			s := h.Stats()
			const huge = 1 << 60
			for _, c := range s.Classes {
				if c.InUse > c.Allocs || c.InUse > huge {
					t.Errorf("class %d: %d in use of %d allocs, %d frees", c.Size, c.InUse, c.Allocs, c.Frees)
				}
			}
			if s.InUseBytes > huge || s.InUseBytes > s.MappedBytes || s.Allocs > huge || s.Frees > huge {
				t.Errorf("Stats wrapped: %v", s)
			}
		})
	}
}

// TestFreeStateSpanGone: the exact check of a block whose span went back
// to the page heap after placeOf looked, and whose span struct another
// class took since, finds the block free (the span went back with every
// block free) instead of reading the other class's span as the block's.
func TestFreeStateSpanGone(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap's blocks wait in its quarantine")
	}
	h := newTestHeap(t, Options{MagazineDepth: -1, ProfileBytes: -1})
	b := h.Alloc(1000)
	a := addrOf(b)
	h.enter()
	p := h.placeOf(a)
	h.exit()
	if p.kind != placeSmall {
		t.Fatalf("placeOf of a live block: %+v", p)
	}
	h.Free(b)
	h.Trim() // the empty span goes back to the page heap
	other := h.Alloc(16)
	defer h.Free(other)
	h.enter()
	defer h.exit()
	if now := h.placeOf(addrOf(other)); now.span != p.span {
		t.Skipf("the 16-byte block's span is %d, not the freed span's %d: nothing to test", now.span, p.span)
	}
	var bad *corruptError
	if got := h.freeState(a, p.class, p.span, p.index, &bad); got != blockFree {
		t.Errorf("freeState of a block whose span went back: %d, want blockFree (%d)", got, blockFree)
	}
}
