package offheap

// Checked mode's stacks: what a report names as the allocation and free
// sites, the frame-pointer unwinder, and the stack depot.

import (
	"runtime"
	"strings"
	"testing"

	"github.com/offheap/offheap/internal/callstack"
)

func TestCheckedAllocStack(t *testing.T) {
	h := checkedHeap(t, Options{})
	b := h.Alloc(300)
	if st := h.allocStack(addrOf(b) + 100); !strings.Contains(st, "TestCheckedAllocStack") {
		t.Fatalf("allocStack: %q", st)
	}
	info, ok := h.Lookup(addrOf(b) + 299)
	if !ok || info.Start != addrOf(b) || info.Size != 300 || info.Freed {
		t.Fatalf("Lookup: %+v %v", info, ok)
	}
	h.Free(b)
	info, ok = h.Lookup(addrOf(b))
	if !ok || !info.Freed || !strings.Contains(info.FreeStack, "TestCheckedAllocStack") {
		t.Fatalf("Lookup after Free: %+v %v", info, ok)
	}
	// Control: a fast heap knows no stacks.
	f := newTestHeap(t, Options{})
	if !buildChecked {
		if st := f.allocStack(addrOf(f.Alloc(300))); st != "" {
			t.Fatalf("fast heap allocStack: %q", st)
		}
	}
}

// TestCheckedStackUnwinder compares the frame-pointer stack with
// runtime.Callers: the cheap unwinder must name the same functions.
func TestCheckedStackUnwinder(t *testing.T) {
	callstack.InitDepot()
	var fpID, rcID stackID
	func() {
		fpID = callStack()
		rcID = callersStack()
	}()
	if fpID == 0 || rcID == 0 {
		t.Fatalf("stack ids %d and %d", fpID, rcID)
	}
	fp, rc := *fpID.Stack(), *rcID.Stack()
	if callstack.FramePointers {
		// The walker's own hash must be the one Stack.Hash computes, or a
		// stack interned both ways would be stored twice.
		var s stack
		n, h := callstack.Walk(&s.PCs)
		s.N = int32(n)
		if n < 3 || h != s.Hash() {
			t.Fatalf("Walk: %d frames, hash %#x, Stack.Hash %#x", n, h, s.Hash())
		}
	}
	names := func(s *stack) []string {
		var out []string
		fr := runtime.CallersFrames(s.Frames())
		for {
			f, more := fr.Next()
			// runtime.Callers elides wrappers; the heap's frames are
			// dropped when a stack is printed.
			if !internalFrame(f.Function) && !strings.Contains(f.Function, ".gowrap") {
				out = append(out, f.Function)
			}
			if !more {
				return out
			}
		}
	}
	a, b := names(&fp), names(&rc)
	if !strings.Contains(strings.Join(a, " "), "TestCheckedStackUnwinder") {
		t.Fatalf("frame-pointer stack %v", a)
	}
	if len(a) < 3 || strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("frame pointers: %v\nruntime.Callers: %v", a, b)
	}
}

// TestCheckedDepot checks a stack as the heap prints it: from the
// caller of the heap's own frames out, and nothing for an id the depot
// never gave (internal/callstack tests the depot itself).
func TestCheckedDepot(t *testing.T) {
	callstack.InitDepot()
	if st := stackText(callStack()); !strings.HasPrefix(st, pkgPrefix+"TestCheckedDepot") {
		t.Fatalf("stack %q does not start at the test", st)
	}
	if stackText(0) != "" || stackText(stackID(^uint32(0))) != "" {
		t.Fatal("an id the depot never gave has a stack")
	}
}
