package offheap

// Checked mode's stacks: what a report names as the allocation and free
// sites, the frame-pointer unwinder, and the stack depot.

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
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
	initDepot()
	var fpID, rcID stackID
	func() {
		fpID = callStack()
		rcID = callersStack()
	}()
	if fpID == 0 || rcID == 0 {
		t.Fatalf("stack ids %d and %d", fpID, rcID)
	}
	fp, rc := *stackEntry(fpID), *stackEntry(rcID)
	if framePointers {
		// The walker's own hash must be the one stack.hash computes, or a
		// stack interned both ways would be stored twice.
		var s stack
		n, h := fpStack(&s.pcs)
		s.n = int32(n)
		if n < 3 || h != s.hash() {
			t.Fatalf("fpStack: %d frames, hash %#x, stack.hash %#x", n, h, s.hash())
		}
	}
	names := func(s *stack) []string {
		var out []string
		fr := runtime.CallersFrames(s.frames())
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

// TestCheckedDepot checks the stack depot: one id per distinct stack, the
// same id for a stack seen again or by many goroutines at once, and no stack
// for an id it never gave.
func TestCheckedDepot(t *testing.T) {
	initDepot()
	var ids [3]stackID
	for i := range ids {
		ids[i] = callStack() // the same stack every time
	}
	other := callStack()
	if ids[0] == 0 || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("one stack, ids %v", ids)
	}
	if other == 0 || other == ids[0] {
		t.Fatalf("two stacks, ids %d and %d", ids[0], other)
	}
	if st := ids[0].String(); !strings.Contains(st, "TestCheckedDepot") {
		t.Fatalf("stack %q does not name the test", st)
	}
	if stackID(0).String() != "" || stackID(^uint32(0)).String() != "" {
		t.Fatal("an id the depot never gave has a stack")
	}

	// A stack no one has seen, interned by many goroutines at once.
	var s stack
	s.n = 3
	s.pcs[0], s.pcs[1], s.pcs[2] = uintptr(unsafe.Pointer(&s)), 2, 3
	const g = 8
	got := make([]stackID, g)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = intern(&s, s.hash()) })
	}
	wg.Wait()
	for _, id := range got {
		if id == 0 || id != got[0] {
			t.Fatalf("one new stack interned at once: ids %v", got)
		}
	}
	if e := stackEntry(got[0]); e.n != 3 || e.pcs != s.pcs {
		t.Fatalf("depot entry %v, want %v", e.pcs[:e.n], s.pcs[:3])
	}
}
