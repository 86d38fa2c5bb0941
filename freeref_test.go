package offheap

import (
	"strings"
	"testing"
)

// TestFreeRef: FreeRef frees the block a Ref names, in fast and checked
// heaps, ignores the zero Ref and an empty one, and panics for a freed
// block (a double free) and another heap's Ref.
func TestFreeRef(t *testing.T) {
	for _, checked := range []bool{false, true} {
		h := newTestHeap(t, Options{Checked: checked})
		other := newTestHeap(t, Options{Checked: checked})
		b := h.Alloc(100)
		r := h.Ref(b[:10])
		before := h.Stats().InUseBytes
		h.FreeRef(r)
		if after := h.Stats().InUseBytes; after >= before {
			t.Fatalf("checked %v: InUseBytes %d after FreeRef, %d before", checked, after, before)
		}
		h.FreeRef(Ref{})
		h.FreeRef(h.Ref(nil))
		if msg := mustPanic(t, func() { h.FreeRef(r) }); !strings.Contains(msg, "free") {
			t.Errorf("checked %v: FreeRef of a freed block: %q", checked, msg)
		}
		ob := other.Alloc(64)
		if msg := mustPanic(t, func() { h.FreeRef(other.Ref(ob)) }); !strings.Contains(msg, "another heap") {
			t.Errorf("checked %v: FreeRef of another heap's Ref: %q", checked, msg)
		}
		other.FreeRef(other.Ref(ob)) // positive control: its own heap frees it
	}
}
