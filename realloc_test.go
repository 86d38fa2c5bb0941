package offheap

import (
	"bytes"
	"errors"
	"testing"
)

// reallocFunc is h.Realloc, or h.ReallocUnzeroed without zero.
func reallocFunc(h *Heap, zero bool) func([]byte, int) []byte {
	if zero {
		return h.Realloc
	}
	return h.ReallocUnzeroed
}

// TestRealloc resizes blocks between sizes across the classes and into and
// out of large blocks, with Realloc and ReallocUnzeroed, in a fast heap and
// a checked one: the bytes that fit are kept, the rest are zero after a
// Realloc (even where the block held other bytes before), the same block
// comes back exactly when a block for the new size would be the same size
// (never in checked mode), and every block is accounted for at the end.
// Positive control: with reallocSmall's clear past the copy removed,
//
//	realloc_test.go:56: zero=true checked=false: Realloc(5 of 9, 8): byte 5 is not zero
func TestRealloc(t *testing.T) {
	sizes := []int{1, 8, 9, 48, 100, 112, 113, 1000, 1024, 4000, maxSmall, maxSmall + 1, 3 * pageSize, 3*pageSize + 1, 100_000}
	for _, c := range []struct{ checked, zero bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		checked := c.checked
		h := newTestHeap(t, Options{Checked: checked, ProfileBytes: -1}) // a sampled block always moves
		realloc := reallocFunc(h, c.zero)
		for _, from := range sizes {
			for _, to := range sizes {
				b := h.Alloc(from)
				// Not the key's low byte: Alloc(9) clears only byte 8 of the
				// key's word, and a fill that put the key back would make
				// Realloc take the block for a free one and move it.
				fill := byte(0xa5)
				if fill == byte(h.key) {
					fill = 0x5a
				}
				for i := range b {
					b[i] = fill
				}
				short := b[:from/2+1] // the bytes past len(short) must not survive
				want := bytes.Clone(short)
				nb := realloc(short, to)
				if len(nb) != to || cap(nb) != to {
					t.Fatalf("checked=%v: Realloc(%d of %d, %d): len %d cap %d", checked, len(short), from, to, len(nb), cap(nb))
				}
				k := min(len(want), to)
				if !bytes.Equal(nb[:k], want[:k]) {
					t.Fatalf("checked=%v: Realloc(%d of %d, %d) lost the contents", checked, len(short), from, to)
				}
				if i := bytes.IndexFunc(nb[k:], func(r rune) bool { return r != 0 }); c.zero && i >= 0 {
					t.Fatalf("zero=%v checked=%v: Realloc(%d of %d, %d): byte %d is not zero", c.zero, checked, len(short), from, to, k+i)
				}
				same := addrOf(nb) == addrOf(b)
				if keep := h.chk == nil && blockBytes(from) == blockBytes(to); same != keep {
					t.Fatalf("checked=%v: Realloc(%d, %d): same block %v, want %v", checked, from, to, same, keep)
				}
				h.Free(nb)
			}
		}
		st := h.Stats()
		if st.Allocs != st.Frees {
			t.Fatalf("checked=%v: %d Allocs, %d Frees", checked, st.Allocs, st.Frees)
		}
		if err := h.Close(); err != nil {
			t.Fatalf("checked=%v: Close: %v", checked, err)
		}
	}
}

// TestReallocEdges: nil and empty slices, size 0, a negative size, for
// Realloc and ReallocUnzeroed.
func TestReallocEdges(t *testing.T) {
	for _, zero := range []bool{true, false} {
		h := newTestHeap(t, Options{})
		realloc := reallocFunc(h, zero)
		b := realloc(nil, 40)
		if len(b) != 40 || (zero && !bytes.Equal(b, make([]byte, 40))) {
			t.Fatalf("zero=%v: Realloc(nil, 40) = %d bytes %v", zero, len(b), b)
		}
		if e := realloc(b, 0); e == nil || len(e) != 0 {
			t.Fatalf("zero=%v: Realloc(b, 0) = %v, want an empty slice", zero, e)
		}
		if st := h.Stats(); st.Frees != 1 || st.InUseBytes != 0 {
			t.Fatalf("zero=%v: Realloc(b, 0) did not free b: %+v", zero, st)
		}
		b = h.Alloc(40)
		copy(b, "kept")
		msg := mustPanic(t, func() { realloc(b, -1) })
		if !bytes.HasPrefix(b, []byte("kept")) {
			t.Fatalf("zero=%v: after %q, b holds %q", zero, msg, b[:4])
		}
		h.Free(b)
	}
}

// TestReallocBadInput: a Realloc of what Free would refuse panics as Free
// does and allocates nothing; one that meets the limit panics with ErrLimit
// and leaves b as it was. Positive control: without Realloc's deferred Free,
// the bad frees each left a block allocated and this test failed.
func TestReallocBadInput(t *testing.T) {
	for _, c := range []struct{ checked, zero bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		checked := c.checked
		h := newTestHeap(t, Options{Checked: checked, Limit: 8 << 20})
		realloc := reallocFunc(h, c.zero)
		b := h.Alloc(100)
		before := h.Stats()
		for name, bad := range map[string][]byte{
			"b[16:]":   b[16:],
			"b[1:]":    b[1:],
			"Go slice": make([]byte, 100),
		} {
			for _, n := range []int{50, 5000, 100_000} {
				mustPanic(t, func() { realloc(bad, n) })
				if st := h.Stats(); st.InUseBytes != before.InUseBytes || st.Allocs-st.Frees != before.Allocs-before.Frees {
					t.Fatalf("checked=%v: Realloc(%s, %d) left memory allocated: in use %d, was %d",
						checked, name, n, st.InUseBytes, before.InUseBytes)
				}
			}
		}
		copy(b, "still here")
		var err error
		func() {
			defer func() { err, _ = recover().(error) }()
			realloc(b, 64<<20)
		}()
		if !errors.Is(err, ErrLimit) {
			t.Fatalf("checked=%v: Realloc past the limit: %v, want ErrLimit", checked, err)
		}
		if !bytes.HasPrefix(b, []byte("still here")) {
			t.Fatalf("checked=%v: b changed by a failed Realloc", checked)
		}
		h.Free(b)
		if err := h.Close(); err != nil {
			t.Fatalf("checked=%v: Close: %v", checked, err)
		}
	}
}
