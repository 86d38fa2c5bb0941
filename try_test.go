package offheap

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestTryRealloc: TryRealloc grows as Realloc does, and where the Limit
// refuses the new block it returns ErrLimit with b as it was, where
// Realloc panics with the same error.
func TestTryRealloc(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 8 << 20})
	b := h.Alloc(100)
	for i := range b {
		b[i] = byte(i)
	}
	nb, err := h.TryRealloc(b, 1000)
	if err != nil || len(nb) != 1000 || nb[99] != 99 || nb[100] != 0 {
		t.Fatalf("TryRealloc(b, 1000): len %d, err %v", len(nb), err)
	}
	b = nb
	for _, f := range []func([]byte, int) ([]byte, error){h.TryRealloc, h.TryReallocUnzeroed} {
		nb, err = f(b, 64<<20)
		if !errors.Is(err, ErrLimit) || nb != nil {
			t.Fatalf("a 64 MiB TryRealloc under an 8 MiB Limit: %d bytes, err %v; want ErrLimit", len(nb), err)
		}
		if b[99] != 99 {
			t.Fatal("the refused TryRealloc changed b")
		}
		if _, err = f(b, -1); !errors.Is(err, ErrSize) {
			t.Fatalf("TryRealloc(b, -1): err %v, want ErrSize", err)
		}
	}
	// Positive control: Realloc panics with the error TryRealloc returned.
	if msg := mustPanic(t, func() { h.Realloc(b, 64<<20) }); !strings.Contains(msg, ErrLimit.Error()) {
		t.Fatalf("Realloc past the Limit panicked %q", msg)
	}
	if nb, err = h.TryRealloc(nil, 10); err != nil || len(nb) != 10 {
		t.Fatalf("TryRealloc(nil, 10): len %d, err %v", len(nb), err)
	}
	h.Free(nb)
	h.Free(b)
}

// TestTryReallocMisuse: misuse is no error a caller handles: TryRealloc
// panics for a freed block, another heap's and a Go slice, as Realloc does.
func TestTryReallocMisuse(t *testing.T) {
	h := newTestHeap(t, Options{})
	other := newTestHeap(t, Options{})
	freed := h.Alloc(64)
	h.Free(freed)
	foreign := other.Alloc(64)
	for name, b := range map[string][]byte{"freed": freed, "foreign": foreign, "Go": make([]byte, 64)} {
		mustPanic(t, func() { _, _ = h.TryRealloc(b, 128) })
		_ = name
	}
	other.Free(foreign)
	h.Close()
	if _, err := h.TryRealloc(make([]byte, 1), 10); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryRealloc on a closed heap: %v, want ErrClosed", err)
	}
}

// TestTryAllocUnzeroedLimit: the Local's and the Arena's TryAllocUnzeroed
// return ErrLimit where their AllocUnzeroed panics.
func TestTryAllocUnzeroedLimit(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 8 << 20})
	l := h.NewLocal()
	defer l.Close()
	a := h.NewArena()
	defer a.Release()
	b, err := l.TryAllocUnzeroed(100)
	if err != nil || len(b) != 100 {
		t.Fatalf("Local.TryAllocUnzeroed(100): len %d, err %v", len(b), err)
	}
	l.Free(b)
	if b, err = a.TryAllocUnzeroed(100); err != nil || len(b) != 100 {
		t.Fatalf("Arena.TryAllocUnzeroed(100): len %d, err %v", len(b), err)
	}
	for name, f := range map[string]func(int) ([]byte, error){"Local": l.TryAllocUnzeroed, "Arena": a.TryAllocUnzeroed} {
		if _, err := f(64 << 20); !errors.Is(err, ErrLimit) {
			t.Errorf("%s.TryAllocUnzeroed(64 MiB) under an 8 MiB Limit: %v, want ErrLimit", name, err)
		}
		if _, err := f(-1); !errors.Is(err, ErrSize) {
			t.Errorf("%s.TryAllocUnzeroed(-1): %v, want ErrSize", name, err)
		}
	}
	// Positive control: the panicking form panics.
	mustPanic(t, func() { l.AllocUnzeroed(64 << 20) })
}

// TestTryTyped: TryNew, TryMakeSlice and TryReallocSlice return the
// errors New, MakeSlice and ReallocSlice panic with.
func TestTryTyped(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 8 << 20})
	p, err := TryNew[[64]int64](h)
	if err != nil || p[63] != 0 {
		t.Fatalf("TryNew: %v", err)
	}
	Free(h, p)
	if _, err = TryNew[[16 << 20]byte](h); !errors.Is(err, ErrLimit) {
		t.Fatalf("TryNew of 16 MiB under an 8 MiB Limit: %v, want ErrLimit", err)
	}
	s, err := TryMakeSlice[int64](h, 10)
	if err != nil || len(s) != 10 {
		t.Fatalf("TryMakeSlice(10): len %d, err %v", len(s), err)
	}
	for _, n := range []int{-1, math.MaxInt / 4} { // MaxInt/4 int64s overflow an int of bytes
		if _, err = TryMakeSlice[int64](h, n); !errors.Is(err, ErrSize) {
			t.Fatalf("TryMakeSlice(%d): %v, want ErrSize", n, err)
		}
		if _, err = TryReallocSlice(h, s, n); !errors.Is(err, ErrSize) {
			t.Fatalf("TryReallocSlice(%d): %v, want ErrSize", n, err)
		}
	}
	if _, err = TryMakeSlice[int64](h, 2<<20); !errors.Is(err, ErrLimit) {
		t.Fatalf("TryMakeSlice of 16 MiB under an 8 MiB Limit: %v, want ErrLimit", err)
	}
	s[9] = 9
	if _, err = TryReallocSlice(h, s, 2<<20); !errors.Is(err, ErrLimit) || s[9] != 9 {
		t.Fatalf("TryReallocSlice to 16 MiB under an 8 MiB Limit: %v, want ErrLimit and s as it was", err)
	}
	if s, err = TryReallocSlice(h, s, 20); err != nil || len(s) != 20 || s[9] != 9 || s[19] != 0 {
		t.Fatalf("TryReallocSlice(20): len %d, err %v", len(s), err)
	}
	FreeSlice(h, s)
	mustPanic(t, func() { _, _ = TryNew[string](h) }) // misuse panics
	// Positive control: the panicking forms panic.
	mustPanic(t, func() { New[[16 << 20]byte](h) })
	mustPanic(t, func() { MakeSlice[int64](h, -1) })
}

// TestTryNewShared: TryNewShared returns ErrLimit past the Limit and
// ErrSize for a negative n, where NewShared panics; a handle it returns
// works as NewShared's does.
func TestTryNewShared(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 8 << 20})
	s, err := h.TryNewShared(100, Hot())
	if err != nil || len(s.Bytes()) != 100 || s.Refs() != 1 {
		t.Fatalf("TryNewShared(100): %d bytes, %d refs, err %v", len(s.Bytes()), s.Refs(), err)
	}
	s.Release()
	if s, err = h.TryNewShared(64 << 20); !errors.Is(err, ErrLimit) || s != (Shared{}) {
		t.Fatalf("TryNewShared(64 MiB) under an 8 MiB Limit: %v, want ErrLimit and the zero Shared", err)
	}
	if _, err = h.TryNewShared(-1); !errors.Is(err, ErrSize) {
		t.Fatalf("TryNewShared(-1): %v, want ErrSize", err)
	}
	// Positive control: NewShared panics where TryNewShared returned.
	mustPanic(t, func() { h.NewShared(64 << 20) })
	if h.Stats().LiveBlocks != 0 {
		t.Fatalf("%d blocks live after the refused allocations", h.Stats().LiveBlocks)
	}
	h.Close()
	if _, err = h.TryNewShared(10); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryNewShared on a closed heap: %v, want ErrClosed", err)
	}
}
