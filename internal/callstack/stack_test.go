package callstack

import (
	"runtime"
	"strings"
	"sync"
	"testing"
)

// capture interns the stack above its caller, as a heap's slow path does.
//
//go:noinline
func capture() ID {
	var s Stack
	return Intern(&s, s.Fill(Walk(&s.PCs)))
}

// captureCallers is capture through runtime.Callers, as on systems where
// frame pointers are not walked.
//
//go:noinline
func captureCallers() ID {
	var s Stack
	return Intern(&s, s.Callers(3)) // runtime.Callers, Stack.Callers, captureCallers
}

// TestWalk checks the frame-pointer walk against runtime.Callers: the same
// PCs, and the hash Hash computes.
func TestWalk(t *testing.T) {
	InitDepot()
	var w, c ID
	func() { w, c = capture(), captureCallers() }()
	ws, cs := w.Stack(), c.Stack()
	if ws == nil || cs == nil {
		t.Fatalf("ids %d and %d: no stack", w, c)
	}
	// The same functions, by name: the frame pointers see an inlined
	// call's frames as one, which runtime.CallersFrames expands, and
	// runtime.Callers leaves out the wrappers of go statements.
	if a, b := names(ws), names(cs); len(a) < 3 || strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("Walk %v\nCallers %v", a, b)
	}
	if ws.Hash() == 0 || cs.Hash() == 0 {
		t.Fatal("a hash of 0")
	}
	if FramePointers {
		var s Stack
		n, h := Walk(&s.PCs)
		s.N = int32(n)
		if h != s.Hash() {
			t.Fatalf("Walk's hash %#x, Hash %#x", h, s.Hash())
		}
	}
	if a := names(ws); !strings.Contains(strings.Join(a, " "), "TestWalk") {
		t.Fatalf("Walk's stack %v does not name the test", a)
	}
}

// TestFormatDropsLeading checks that Format drops the leading frames the
// caller calls its own, and keeps every frame from the first that is not.
func TestFormatDropsLeading(t *testing.T) {
	InitDepot()
	id := capture() // innermost first: this test, then testing's frames
	all := id.Format(func(string) bool { return false })
	if !strings.Contains(all, ".TestFormatDropsLeading\n") || strings.Index(all, "TestFormatDropsLeading") > strings.Index(all, "testing.tRunner") {
		t.Fatalf("unfiltered: %q", all)
	}
	mine := id.Format(func(fn string) bool {
		return strings.HasSuffix(fn, ".TestFormatDropsLeading") || fn == "testing.tRunner"
	})
	if strings.Contains(mine, "TestFormatDropsLeading") || !strings.HasPrefix(mine, "testing.(*T).Run") {
		t.Fatalf("filtered: %q", mine)
	}
}

// TestDepot checks the depot: one ID per distinct stack, the same ID for a
// stack seen again or by many goroutines at once, and no stack for an ID it
// never gave.
func TestDepot(t *testing.T) {
	InitDepot()
	var ids [3]ID
	for i := range ids {
		ids[i] = capture() // the same stack every time
	}
	other := capture()
	if ids[0] == 0 || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("one stack, ids %v", ids)
	}
	if other == 0 || other == ids[0] {
		t.Fatalf("two stacks, ids %d and %d", ids[0], other)
	}
	if ID(0).Stack() != nil || ID(^uint32(0)).Stack() != nil || ID(0).Format(nil) != "" {
		t.Fatal("an id the depot never gave has a stack")
	}

	// A stack no one has seen, interned by many goroutines at once.
	var s Stack
	s.N = 3
	s.PCs[0], s.PCs[1], s.PCs[2] = 1, 2, 0x7e57 // PCs no code has
	const g = 8
	got := make([]ID, g)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = Intern(&s, s.Hash()) })
	}
	wg.Wait()
	for _, id := range got {
		if id == 0 || id != got[0] {
			t.Fatalf("one new stack interned at once: ids %v", got)
		}
	}
	if e := got[0].Stack(); e == nil || e.N != 3 || e.PCs != s.PCs {
		t.Fatalf("depot entry %v, want %v", e, s.PCs[:3])
	}
}

// names is the functions of s's frames, inlined ones included, but for
// the wrappers of go statements.
func names(s *Stack) []string {
	var out []string
	fr := runtime.CallersFrames(s.Frames())
	for {
		f, more := fr.Next()
		if !strings.Contains(f.Function, ".gowrap") {
			out = append(out, f.Function)
		}
		if !more {
			return out
		}
	}
}
