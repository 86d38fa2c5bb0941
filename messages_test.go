package offheap

import (
	"strings"
	"testing"
)

// The messages a user meets first must say what is wrong and what to do.

type eventMeta struct {
	ID   uint64
	Name string
}

type event struct {
	At   int64
	Meta eventMeta
}

// TestTypedNamesField: New and MakeSlice name the field that holds a Go
// pointer, by its path, and say what to use instead.
func TestTypedNamesField(t *testing.T) {
	h := newTestHeap(t, Options{})
	type withPtrArray struct{ P [2]*int }
	for _, tc := range []struct {
		f    func()
		want []string
	}{
		{func() { New[event](h) }, []string{"New[offheap.event]: event.Meta.Name is a string", "[N]byte"}},
		{func() { MakeSlice[event](h, 4) }, []string{"MakeSlice[offheap.event]: event.Meta.Name is a string"}},
		{func() { New[withPtrArray](h) }, []string{"withPtrArray.P[0] is a pointer", "uintptr"}},
		{func() { New[struct{ B []byte }](h) }, []string{"T.B is a slice", "MakeSlice"}},
		{func() { New[*int](h) }, []string{"*int is a pointer"}},
		{func() { New[map[int]int](h) }, []string{"map[int]int is a map", "Go heap"}},
		{func() { New[any](h) }, []string{"interface {} is an interface"}},
		{func() { New[func()](h) }, []string{"func() is a func"}},
	} {
		msg := mustPanic(t, tc.f)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q does not say %q", msg, w)
			}
		}
		if !strings.Contains(msg, "Go pointers") {
			t.Errorf("%q does not say why", msg)
		}
	}
}

// TestFreeAppendMoved: Free of a slice that append moved to the Go heap
// leads with the cause (not this heap's block) and ends with the way out
// (free through the heap that allocated it; Realloc, not append), in a
// fast heap and in a checked one.
func TestFreeAppendMoved(t *testing.T) {
	for _, checked := range []bool{false, true} {
		h := newTestHeap(t, Options{Checked: checked})
		b := h.Alloc(16)
		grown := append(b, make([]byte, 64)...) // full: append copies to the Go heap
		msg := mustPanic(t, func() { h.Free(grown) })
		at := -1
		for _, w := range []string{"did not allocate", "free a block through the heap that allocated it", "Realloc", "append copies"} {
			i := strings.Index(msg, w)
			if i < 0 || i < at {
				t.Errorf("checked=%v: %q does not say %q after what comes before it", checked, msg, w)
			}
			at = i
		}
		h.Free(b) // the refused Free left the heap and b intact
	}
}

// freeAgain is the second Free of TestDoubleFreeStacks, in a frame of its
// own so that its stack is told apart from the first Free's.
//
//go:noinline
func freeAgain(h *Heap, b []byte) { h.Free(b) }

// TestDoubleFreeStacks: a checked double free reports the stack of the Free
// it refused, labelled "freed again at", beside the allocation's and the
// first Free's, for a small block and a large one.
func TestDoubleFreeStacks(t *testing.T) {
	for _, n := range []int{64, 100_000} {
		h := checkedHeap(t, Options{})
		b := h.Alloc(n)
		h.Free(b)
		me := memoryError(t, func() { freeAgain(h, b) })
		if me.Kind != DoubleFree {
			t.Fatalf("n=%d: %v", n, me)
		}
		wantStack(t, "second free", me.AgainStack, "freeAgain")
		if strings.Contains(me.FreeStack, "freeAgain") {
			t.Errorf("n=%d: the first Free's stack names the second Free:\n%s", n, me.FreeStack)
		}
		msg := me.Error()
		first, again := strings.Index(msg, "\nfirst freed at:\n"), strings.Index(msg, "\nfreed again at:\n")
		if first < 0 || again < first || !strings.Contains(msg[again:], "freeAgain") {
			t.Errorf("n=%d: message does not label the second Free's stack after the first's:\n%s", n, msg)
		}
		closeClean(t, h)
	}
}

// TestFreeInsideBlockCounts: a Free one byte into a block says "1 byte
// into", in fast and checked mode, and the Ref of such a slice too.
func TestFreeInsideBlockCounts(t *testing.T) {
	for _, opts := range []Options{{}, {Checked: true}} {
		h := newTestHeap(t, opts)
		b := h.Alloc(64)
		for name, f := range map[string]func(){"Free": func() { h.Free(b[1:]) }, "Ref": func() { h.Ref(b[1:]) }} {
			if msg := mustPanic(t, f); !strings.Contains(msg, "it is 1 byte into the") {
				t.Errorf("checked=%v: %s one byte into a block: %q", opts.Checked, name, msg)
			}
		}
		h.Free(b)
	}
}

// TestFreeInsideBlock: a Free or Realloc of a slice that starts inside a
// block, small or large, says where it points and ends with the way out
// (the slice Alloc returned), in a fast heap and in a checked one, and
// leaves the block to its Free.
func TestFreeInsideBlock(t *testing.T) {
	for _, checked := range []bool{false, true} {
		testFreeInsideBlock(t, newTestHeap(t, Options{Checked: checked}))
	}
}

func testFreeInsideBlock(t *testing.T, h *Heap) {
	for _, n := range []int{64, 3 * maxSmall} {
		b := h.Alloc(n)
		for op, f := range map[string]func(){"Free": func() { h.Free(b[8:]) }, "Realloc": func() { h.Realloc(b[8:], 2*n) }} {
			msg := mustPanic(t, f)
			at := -1
			for _, w := range []string{"not the start of a block", "8 bytes into", "the slice Alloc returned", "b[i:]"} {
				i := strings.Index(msg, w)
				if i < 0 || i < at {
					t.Errorf("checked=%v, %d bytes, %s: %q does not say %q after what comes before it", h.checked(), n, op, msg, w)
				}
				at = i
			}
		}
		h.Free(b)
	}
}
