package offheap

import (
	"errors"
	"math"
	"strings"
	"testing"
	"unsafe"
)

type plain struct {
	A int64
	B [3]float32
	C struct{ D, E uint8 }
}

func TestTyped(t *testing.T) {
	h := newTestHeap(t, Options{})
	p := New[plain](h)
	if *p != (plain{}) {
		t.Fatalf("New: %+v, not zeroed", *p)
	}
	if uintptr(unsafe.Pointer(p))%unsafe.Alignof(*p) != 0 {
		t.Fatal("New: misaligned")
	}
	p.A = 7
	s := MakeSlice[plain](h, 1000)
	if len(s) != 1000 || cap(s) != 1000 {
		t.Fatalf("MakeSlice: len %d cap %d", len(s), cap(s))
	}
	s[999] = *p
	FreeSlice(h, s)
	Free(h, p)
	Free[plain](h, nil)
	FreeSlice[plain](h, nil)
	if got := MakeSlice[int](h, 0); got == nil || len(got) != 0 {
		t.Fatalf("MakeSlice(0) = %v", got)
	}
	// Zero-size types need no memory and free as no-ops.
	z := New[struct{}](h)
	Free(h, z)
	FreeSlice(h, MakeSlice[struct{}](h, 10))
	if st := h.Stats(); st.InUseBytes != 0 || st.Allocs != 2 {
		t.Fatalf("after freeing: %+v", st)
	}
}

func TestTypedRefusesPointers(t *testing.T) {
	h := newTestHeap(t, Options{})
	type withString struct {
		N int
		S string
	}
	type withPtrArray struct{ P [2]*int }
	type fine struct{ A [0]*int } // a zero-length array holds nothing
	for name, f := range map[string]func(){
		"New[*int]":            func() { New[*int](h) },
		"New[withString]":      func() { New[withString](h) },
		"MakeSlice[[]byte]":    func() { MakeSlice[[]byte](h, 3) },
		"MakeSlice[map]":       func() { MakeSlice[map[int]int](h, 3) },
		"New[withPtrArray]":    func() { New[withPtrArray](h) },
		"New[any]":             func() { New[any](h) },
		"New[unsafe.Pointer]":  func() { New[unsafe.Pointer](h) },
		"MakeSlice[chan int]":  func() { MakeSlice[chan int](h, 1) },
		"New[func()]":          func() { New[func()](h) },
		"MakeSlice[negative]":  func() { MakeSlice[int](h, -1) },
		"MakeSlice[too large]": func() { MakeSlice[[1 << 20]byte](h, math.MaxInt>>10) },
	} {
		msg := mustPanic(t, f)
		if !strings.Contains(msg, "Go pointers") && !strings.Contains(msg, "negative") && !strings.Contains(msg, "too large") {
			t.Errorf("%s: %q does not say why", name, msg)
		}
	}
	if msg := mustPanic(t, func() { New[withString](h) }); !strings.Contains(msg, "withString") {
		t.Errorf("the panic does not name the type: %q", msg)
	}
	New[fine](h) // no panic
	if st := h.Stats(); st.InUseBytes != 0 {
		t.Fatalf("refused allocations left %d bytes in use", st.InUseBytes)
	}
}

// TestTypedThroughCache makes a value and a slice from a Local and frees
// them through it, and through the Heap, as Free takes what Alloc took.
func TestTypedThroughCache(t *testing.T) {
	h := newTestHeap(t, Options{})
	c := h.NewLocal()
	defer c.Close()
	p, s := New[plain](c), MakeSlice[plain](c, 100)
	Free(c, p)
	FreeSlice(c, s)
	q := New[plain](c)
	Free(h, q)
	if st := h.Stats(); st.InUseBytes != 0 || st.LiveBlocks != 0 {
		t.Fatalf("after freeing through the Local and the Heap: %d bytes in %d blocks in use", st.InUseBytes, st.LiveBlocks)
	}
}

func TestTryAllocUnzeroed(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 1 << 20})
	b, err := h.TryAllocUnzeroed(100)
	if err != nil || len(b) != 100 {
		t.Fatalf("TryAllocUnzeroed(100) = %d bytes, %v", len(b), err)
	}
	h.Free(b)
	if _, err := h.TryAllocUnzeroed(-1); !errors.Is(err, ErrSize) {
		t.Errorf("TryAllocUnzeroed(-1): %v, want ErrSize", err)
	}
	if _, err := h.TryAllocUnzeroed(2 << 20); !errors.Is(err, ErrLimit) {
		t.Errorf("TryAllocUnzeroed past the limit: %v, want ErrLimit", err)
	}
	if st := h.Stats(); st.InUseBytes != 0 {
		t.Errorf("%d bytes in use after the refusals", st.InUseBytes)
	}
}
