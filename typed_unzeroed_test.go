package offheap

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// TestMakeSliceUnzeroed: MakeSliceUnzeroed leaves the memory as it was,
// where MakeSlice zeroes it (the positive control): through a Local, whose
// stack hands the block just freed back to the same goroutine.
func TestMakeSliceUnzeroed(t *testing.T) {
	skipCheckedBuild(t) // a checked heap fills its blocks, and quarantines freed ones
	h := newTestHeap(t, unprofiled(Options{}))
	l := h.NewLocal()
	defer l.Close()
	for _, arm := range []struct {
		name string
		make func(Allocator, int) []float64
		want float64 // s[50] after s was filled and freed
	}{{"MakeSliceUnzeroed", MakeSliceUnzeroed[float64], 50}, {"MakeSlice", MakeSlice[float64], 0}} {
		s := MakeSlice[float64](l, 100)
		for i := range s {
			s[i] = float64(i)
		}
		FreeSlice(l, s)
		s = arm.make(l, 100)
		if len(s) != 100 || cap(s) != 100 || s[50] != arm.want {
			t.Errorf("%s(100) after a filled block's Free: len %d, cap %d, s[50] %v; want %v",
				arm.name, len(s), cap(s), s[50], arm.want)
		}
		FreeSlice(l, s)
	}
	// From each kind of Allocator, and the sizes with no memory.
	a := h.NewArena()
	defer a.Release()
	for _, al := range []Allocator{h, l, a} {
		s := MakeSliceUnzeroed[float64](al, 1000)
		for i := range s {
			s[i] = 1
		}
		if s, err := TryMakeSliceUnzeroed[float64](al, 3); err != nil || len(s) != 3 {
			t.Errorf("TryMakeSliceUnzeroed(3) from %T: len %d, %v", al, len(s), err)
		}
	}
	if s := MakeSliceUnzeroed[float64](h, 0); s == nil || len(s) != 0 {
		t.Errorf("MakeSliceUnzeroed(0) = %v", s)
	}
	if s := MakeSliceUnzeroed[struct{}](h, 10); len(s) != 10 {
		t.Errorf("MakeSliceUnzeroed[struct{}](10): len %d", len(s))
	}
}

// TestTryMakeSliceUnzeroed: TryMakeSliceUnzeroed returns ErrLimit, ErrSize
// and ErrClosed where MakeSliceUnzeroed panics with them, "offheap:" first.
func TestTryMakeSliceUnzeroed(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 8 << 20})
	if s, err := TryMakeSliceUnzeroed[float64](h, 2<<20); !errors.Is(err, ErrLimit) || s != nil {
		t.Errorf("TryMakeSliceUnzeroed of 16 MiB under an 8 MiB Limit: %v, want ErrLimit", err)
	}
	for _, n := range []int{-1, math.MaxInt / 4} {
		if _, err := TryMakeSliceUnzeroed[float64](h, n); !errors.Is(err, ErrSize) {
			t.Errorf("TryMakeSliceUnzeroed(%d): %v, want ErrSize", n, err)
		}
		msg := mustPanic(t, func() { MakeSliceUnzeroed[float64](h, n) })
		onePrefix(t, fmt.Sprintf("MakeSliceUnzeroed(%d)", n), msg)
	}
	// Positive control: the plain form panics with the error.
	err := closedErr(func() error { MakeSliceUnzeroed[float64](h, 2<<20); return nil })
	if !errors.Is(err, ErrLimit) {
		t.Errorf("MakeSliceUnzeroed of 16 MiB under an 8 MiB Limit: %v, want a panic wrapping ErrLimit", err)
	}
	mustPanic(t, func() { _, _ = TryMakeSliceUnzeroed[*int](h, 1) }) // misuse panics
	h.Close()
	if _, err := TryMakeSliceUnzeroed[float64](h, 10); !errors.Is(err, ErrClosed) {
		t.Errorf("TryMakeSliceUnzeroed on a closed heap: %v, want ErrClosed", err)
	}
	wantClosed(t, "MakeSliceUnzeroed", func() error { MakeSliceUnzeroed[float64](h, 10); return nil })
}
