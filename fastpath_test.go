package offheap

import (
	"math"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// stackOf is a stack of class c with room for depth blocks, for the tests of
// the fast path's helpers: Go memory, which only the test touches, with
// sampling off.
func stackOf(c uint8, depth uint32) *stacks {
	s := new(stacks)
	s.cls[c].cap = depth
	s.cls[c].sampleAt = math.MaxUint64
	return s
}

// fillA5 writes 0xa5 to b's every byte, the double-free key's word
// included.
func fillA5(b []byte) {
	for i := range b {
		b[i] = 0xa5
	}
}

// TestPopAndPut: put pushes while the stack has room and counts each push;
// pop takes the last block pushed first, counts a hit, and declines on an
// empty stack and where the stack is to sample (sampleAt reached), leaving
// the stack as it was.
func TestPopAndPut(t *testing.T) {
	const c = 5
	s := stackOf(c, 3)
	if a := s.pop(c); a != 0 {
		t.Fatalf("pop of an empty stack: %#x", a)
	}
	for _, a := range []uintptr{0x1000, 0x2000, 0x3000} {
		if !s.put(c, a) {
			t.Fatalf("put of %#x refused with %d of %d held", a, s.cls[c].n, s.cls[c].cap)
		}
	}
	if s.room(c) || s.put(c, 0x4000) {
		t.Fatal("a full stack has room")
	}
	if mc := s.cls[c]; mc.n != 3 || mc.frees != 3 {
		t.Fatalf("after 3 puts: %d held, %d frees counted", mc.n, mc.frees)
	}
	if a := s.pop(c); a != 0x3000 || s.cls[c].hits != 1 || s.cls[c].n != 2 {
		t.Fatalf("pop: %#x, %d hits, %d held; want 0x3000, 1, 2", a, s.cls[c].hits, s.cls[c].n)
	}
	s.cls[c].sampleAt = s.cls[c].hits
	if a := s.pop(c); a != 0 || s.cls[c].n != 2 || s.cls[c].hits != 1 {
		t.Fatalf("pop of a stack about to sample: %#x, %d held, %d hits", a, s.cls[c].n, s.cls[c].hits)
	}
	s.cls[c].sampleAt = math.MaxUint64
	if a, b := s.pop(c), s.pop(c); a != 0x2000 || b != 0x1000 || s.pop(c) != 0 {
		t.Fatalf("pops: %#x, %#x; want 0x2000, 0x1000, then none", a, b)
	}
}

// TestPopClears: popZeroed zeroes the n bytes it hands out and no byte
// after them; popUnzeroed clears only the double-free key's word, and
// nothing of an 8-byte block, which has none. Blocks of a heap, every
// class.
func TestPopClears(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{}))
	for c := uint8(1); c < numClasses; c++ {
		size := int(classSize[c])
		for _, n := range []int{int(classSize[c-1]) + 1, size} {
			b := h.Alloc(size)
			a := addrOf(b)
			s := stackOf(c, 1)

			fillA5(b)
			s.put(c, a)
			if got := s.popZeroed(c, n); got != a {
				t.Fatalf("popZeroed(%d, %d): %#x, want %#x", c, n, got, a)
			}
			for i, x := range b {
				if want := byte(0xa5); i < n && x != 0 || i >= n && x != want {
					t.Fatalf("popZeroed(%d, %d): byte %d is %#x", c, n, i, x)
				}
			}

			fillA5(b)
			s.put(c, a)
			if got := s.popUnzeroed(c, n); got != a {
				t.Fatalf("popUnzeroed(%d, %d): %#x, want %#x", c, n, got, a)
			}
			for i, x := range b {
				if key := n > 8 && i >= 8 && i < 16; key && x != 0 || !key && x != 0xa5 {
					t.Fatalf("popUnzeroed(%d, %d): byte %d is %#x", c, n, i, x)
				}
			}
			if s.popZeroed(c, n) != 0 || s.popUnzeroed(c, n) != 0 {
				t.Fatal("a pop of an empty stack handed out a block")
			}
			h.Free(b)
		}
	}
}

// TestSmallStartAndClaim: smallStart takes the start of every small block
// of every class, with its class, and nothing else: an address inside a
// block, a span's tail, a large block, a free page; claim marks a block
// freed once, refuses the second time, and takes an 8-byte block, which
// has no key, every time; keyed sees the mark.
func TestSmallStartAndClaim(t *testing.T) {
	skipChecked(t) // a checked heap's blocks are the checker's
	h := newTestHeap(t, unprofiled(Options{MagazineDepth: -1}))
	word := func(a uintptr) uint64 {
		page, ok := h.pages.PageOf(a)
		if !ok {
			t.Fatalf("%#x is not in the heap", a)
		}
		return *h.pages.Entry(page)
	}
	for c := uint8(1); c < numClasses; c++ {
		b := h.Alloc(int(classSize[c]))
		a := addrOf(b)
		if got, ok := smallStart(a, word(a)); !ok || got != c {
			t.Fatalf("class %d: smallStart of a block: %d, %v", c, got, ok)
		}
		for _, in := range []uintptr{1, uintptr(classSize[c]) / 2, uintptr(classSize[c]) - 1} {
			if in == 0 || in == uintptr(classSize[c]) {
				continue
			}
			if _, ok := smallStart(a+in, word(a+in)); ok {
				t.Fatalf("class %d: smallStart took %d bytes into a block", c, in)
			}
		}
		if tail := spanAt(&h.pages, pageheap.WordSpan(word(a))).start + uintptr(classBlocks[c])*uintptr(classSize[c]); tail&(pageSize-1) != 0 {
			if _, ok := smallStart(tail, word(tail)); ok {
				t.Fatalf("class %d: smallStart took the span's tail at %#x", c, tail)
			}
		}
		if keyed := h.keyed(a, c); keyed || !h.claim(a, c) {
			t.Fatalf("class %d: a live block keyed %v, or refused", c, keyed)
		}
		if again := h.claim(a, c); again != (c == 1) || h.keyed(a, c) != (c != 1) {
			t.Fatalf("class %d: a second claim %v, keyed %v", c, again, h.keyed(a, c))
		}
		(*[2]uint64)(ptr(a))[1] = 0 // live again, for its Free
		h.Free(b)
	}
	big := h.Alloc(maxSmall + 1)
	if _, ok := smallStart(addrOf(big), word(addrOf(big))); ok {
		t.Fatal("smallStart took a large block")
	}
	if _, ok := smallStart(addrOf(big), 0); ok {
		t.Fatal("smallStart took a free page")
	}
	h.Free(big)
}
