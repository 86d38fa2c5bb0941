package offheap

import (
	"strings"
	"testing"
)

// TestUsableSize: a small block's usable size is its class, a large
// block's its pages, and Realloc up to it keeps the memory in place (in a
// heap that does not profile: a sample is copied).
func TestUsableSize(t *testing.T) {
	h := newTestHeap(t, Options{ProfileBytes: -1})
	for _, n := range []int{1, 8, 40, 100, 1000, maxSmall, maxSmall + 1, 1 << 20} {
		b := h.Alloc(n)
		u := h.UsableSize(b)
		if u < n {
			t.Fatalf("UsableSize(Alloc(%d)) = %d, less than the request", n, u)
		}
		if u != h.UsableSize(b[:0]) {
			t.Fatalf("UsableSize(b[:0]) differs from UsableSize(b) for Alloc(%d)", n)
		}
		nb := h.Realloc(b, u)
		if addrOf(nb) != addrOf(b) && !h.checked() { // a checked heap's Realloc always moves
			t.Fatalf("Realloc of Alloc(%d) to its UsableSize %d moved the block", n, u)
		}
		h.Free(nb)
	}
	if h.UsableSize(nil) != 0 {
		t.Fatal("UsableSize(nil) is not 0")
	}
}

// TestUsableSizeMisuse: a freed block, another heap's, a Go slice and the
// middle of a block panic, naming the problem.
func TestUsableSizeMisuse(t *testing.T) {
	for _, checked := range []bool{false, true} {
		h := newTestHeap(t, Options{Checked: checked})
		other := newTestHeap(t, Options{})
		b := h.Alloc(64)
		freed := h.Alloc(64)
		h.Free(freed)
		foreign := other.Alloc(64)
		if u := h.UsableSize(b); u < 64 || checked && u != 64 {
			t.Fatalf("checked %v: UsableSize(Alloc(64)) = %d", checked, u)
		}
		for _, c := range []struct {
			name, want string
			b          []byte
		}{
			{"foreign", "did not allocate", foreign},
			{"Go", "did not allocate", make([]byte, 64)},
			{"inside", "not the start of a block", b[1:]},
		} {
			if msg := mustPanic(t, func() { h.UsableSize(c.b) }); !strings.Contains(msg, c.want) {
				t.Errorf("checked %v: UsableSize of a %s slice: %q, want %q in it", checked, c.name, msg, c.want)
			}
		}
		mustPanic(t, func() { h.UsableSize(freed) })
		h.Free(b)
		other.Free(foreign)
	}
}
