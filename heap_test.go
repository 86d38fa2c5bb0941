package offheap

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// arms are the heap configurations every behavioural test runs against.
var arms = []struct {
	name string
	opts Options
}{
	{"magazines", Options{}},
	{"nomag", Options{MagazineDepth: -1}},
	{"depth1", Options{MagazineDepth: 1}},
}

// unprofiled is opts without the allocation profile, for the tests of what
// a fast heap's blocks are and how the census counts them: the profile
// gives each sampled block a page run of its own (profile.go).
func unprofiled(opts Options) Options {
	opts.ProfileBytes = -1
	return opts
}

func newTestHeap(t testing.TB, opts Options) *Heap {
	t.Helper()
	h, err := NewHeap(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// sizes covers every class boundary and a few large sizes.
func testSizes() []int {
	var s []int
	for c := 1; c < numClasses; c++ {
		n := int(classSize[c])
		s = append(s, n, n-1)
		if c > 1 {
			s = append(s, int(classSize[c-1])+1)
		}
	}
	return append(s, 1, maxSmall+1, 100_000, 1<<20+3)
}

func TestAllocShape(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			for _, n := range testSizes() {
				for _, alloc := range []func(int) []byte{h.Alloc, h.AllocUnzeroed} {
					b := alloc(n)
					if len(b) != n || cap(b) != n {
						t.Fatalf("Alloc(%d): len %d cap %d", n, len(b), cap(b))
					}
					align := uintptr(16)
					if n <= 8 {
						align = 8
					}
					if a := addrOf(b); a%align != 0 {
						t.Fatalf("Alloc(%d) = %#x, not %d-aligned", n, a, align)
					}
					for i := range b {
						b[i] = 0xAB
					}
					h.Free(b)
				}
				// Zeroed even though the same block was just dirtied.
				b := h.Alloc(n)
				for i, x := range b {
					if x != 0 {
						t.Fatalf("Alloc(%d)[%d] = %#x, want 0", n, i, x)
					}
				}
				h.Free(b)
			}
			if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != s.Frees {
				t.Fatalf("after freeing all: %+v", s)
			}
		})
	}
}

func TestAllocZero(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.Alloc(0)
	if b == nil || len(b) != 0 {
		t.Fatalf("Alloc(0) = %v (nil %v)", b, b == nil)
	}
	h.Free(b)
	h.Free(nil)
	if s := h.Stats(); s.Allocs != 0 || s.Frees != 0 {
		t.Fatalf("zero-size operations were counted: %+v", s)
	}
}

// mustPanic runs f and returns the message it panicked with, or fails.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("did not panic")
		}
		msg = fmt.Sprint(r)
		if !strings.HasPrefix(msg, "offheap: ") {
			t.Fatalf("panic message %q does not start with \"offheap: \"", msg)
		}
	}()
	f()
	return ""
}

// TestMustPanicControl: a function that does not panic must fail mustPanic.
func TestMustPanicControl(t *testing.T) {
	var inner testing.T
	done := make(chan bool)
	go func() {
		defer func() { done <- inner.Failed() }()
		mustPanic(&inner, func() {})
	}()
	if !<-done {
		t.Fatal("mustPanic passed a function that did not panic")
	}
}

func TestBadInput(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			if msg := mustPanic(t, func() { h.Alloc(-1) }); !strings.Contains(msg, "negative size -1") {
				t.Errorf("Alloc(-1): %q", msg)
			}
			if _, err := h.TryAlloc(-5); !errors.Is(err, ErrSize) {
				t.Errorf("TryAlloc(-5) error = %v, want ErrSize", err)
			}
			if _, err := h.TryAlloc(math.MaxInt); !errors.Is(err, ErrSize) && !errors.Is(err, ErrLimit) {
				t.Errorf("TryAlloc(MaxInt) error = %v", err)
			}
			goSlice := make([]byte, 64)
			if msg := mustPanic(t, func() { h.Free(goSlice) }); !strings.Contains(msg, "did not allocate") {
				t.Errorf("Free(Go slice): %q", msg)
			}
			for _, n := range []int{64, 1000, maxSmall, maxSmall + 1, 1 << 20} {
				b := h.Alloc(n)
				if msg := mustPanic(t, func() { h.Free(b[1:]) }); !strings.Contains(msg, "not the start of a block") {
					t.Errorf("Free(b[1:]) of %d bytes: %q", n, msg)
				}
				if n > pageSize {
					if msg := mustPanic(t, func() { h.Free(b[pageSize:]) }); !strings.Contains(msg, "not the start of a block") {
						t.Errorf("Free(b[pageSize:]) of %d bytes: %q", n, msg)
					}
				}
				h.Free(b) // the heap is intact: the real start still frees
			}
			// A page the heap never handed out.
			b := h.Alloc(1 << 20)
			h.Free(b)
			if msg := mustPanic(t, func() { h.Free(b) }); !strings.Contains(msg, "not allocated") {
				t.Errorf("Free of a freed large block: %q", msg)
			}
			if s := h.Stats(); s.InUseBytes != 0 {
				t.Fatalf("bad input leaked: %+v", s)
			}
			// Another heap's block.
			other := newTestHeap(t, arm.opts)
			ob := other.Alloc(64)
			if msg := mustPanic(t, func() { h.Free(ob) }); !strings.Contains(msg, "did not allocate") {
				t.Errorf("Free of another heap's block: %q", msg)
			}
			other.Free(ob)
		})
	}
}
