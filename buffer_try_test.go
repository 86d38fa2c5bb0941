package offheap

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// recoverError runs f and returns the error it panicked with, failing the
// test, as mustPanic does, if it did not panic or its message does not
// start "offheap: ", and if it panicked with a value that is no error.
func recoverError(t *testing.T, f func()) error {
	t.Helper()
	var r any
	mustPanic(t, func() {
		defer func() {
			if r = recover(); r != nil {
				panic(r)
			}
		}()
		f()
	})
	err, ok := r.(error)
	if !ok {
		t.Fatalf("panicked with %T %v, not an error", r, r)
	}
	return err
}

// TestBufferTryLimit: under a small Limit, TryGrow and TryNewBuffer return
// ErrLimit, the Buffer keeps its bytes and block, and no block is left
// behind; Grow and NewBuffer panic with the same error. The positive
// control: the same calls within the Limit succeed, so the error comes from
// the Limit and not from the Try forms.
func TestBufferTryLimit(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 4 << 20})
	b := h.NewBuffer(100)
	b.WriteString("kept")
	cap0, live := b.Cap(), h.Stats().LiveBlocks

	if err := b.TryGrow(8 << 20); !errors.Is(err, ErrLimit) {
		t.Fatalf("TryGrow of 8 MiB under a 4 MiB Limit: %v, want ErrLimit", err)
	}
	if b.String() != "kept" || b.Cap() != cap0 {
		t.Fatalf("after TryGrow's refusal: %q, Cap %d (was %d)", b.String(), b.Cap(), cap0)
	}
	nb, err := h.TryNewBuffer(8 << 20)
	if !errors.Is(err, ErrLimit) || nb != nil {
		t.Fatalf("TryNewBuffer of 8 MiB under a 4 MiB Limit: a Buffer %t, %v; want none, ErrLimit", nb != nil, err)
	}
	if got := h.Stats().LiveBlocks; got != live {
		t.Fatalf("%d live blocks after the refusals, %d before", got, live)
	}

	for name, f := range map[string]func(){
		"Grow":      func() { b.Grow(8 << 20) },
		"NewBuffer": func() { h.NewBuffer(8 << 20) },
	} {
		if err := recoverError(t, f); !errors.Is(err, ErrLimit) {
			t.Errorf("%s past the Limit panicked with %v, want ErrLimit", name, err)
		}
	}
	if b.String() != "kept" || b.Cap() != cap0 {
		t.Fatalf("after Grow's panic: %q, Cap %d (was %d)", b.String(), b.Cap(), cap0)
	}

	// The control: within the Limit both succeed.
	if err := b.TryGrow(1 << 20); err != nil || b.Cap()-b.Len() < 1<<20 || b.String() != "kept" {
		t.Fatalf("TryGrow of 1 MiB under a 4 MiB Limit: %v, Cap %d, %q", err, b.Cap(), b.String())
	}
	nb, err = h.TryNewBuffer(1 << 20)
	if err != nil || nb.Cap() < 1<<20 {
		t.Fatalf("TryNewBuffer of 1 MiB under a 4 MiB Limit: %v", err)
	}
	nb.Free()
	b.Free()
	if got := h.Stats().LiveBlocks; got != 0 {
		t.Fatalf("%d live blocks after Free", got)
	}
}

// TestBufferTryErrors: the other errors TryGrow and TryNewBuffer return
// instead of panicking (ErrSize, ErrAddressSpace, ErrClosed), each the one
// the plain form panics with, and never one of the others.
func TestBufferTryErrors(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.NewBuffer(0)
	b.WriteString("kept")
	others := []error{ErrLimit, ErrSize, ErrAddressSpace, ErrClosed}
	only := func(err, want error) bool {
		for _, e := range others {
			if errors.Is(err, e) != (e == want) {
				return false
			}
		}
		return true
	}
	type call struct {
		name  string
		try   func() error
		plain func()
		want  error
	}
	calls := []call{
		{"Grow(-1)", func() error { return b.TryGrow(-1) }, func() { b.Grow(-1) }, ErrSize},
		{"NewBuffer(-1)", func() error { _, err := h.TryNewBuffer(-1); return err }, func() { h.NewBuffer(-1) }, ErrSize},
	}
	if most := maxAlloc; most < math.MaxInt { // a variable: most+1 overflows no constant
		calls = append(calls,
			call{"Grow(maxAlloc)", func() error { return b.TryGrow(most) }, func() { b.Grow(most) }, ErrSize},
			call{"NewBuffer(maxAlloc+1)", func() error { _, err := h.TryNewBuffer(most + 1); return err }, func() { h.NewBuffer(most + 1) }, ErrSize})
	}
	if math.MaxInt >= 16<<40 {
		n64 := uint64(16<<40 - 1<<20) // within maxAlloc, past what a heap's address space holds
		n := int(n64)
		calls = append(calls,
			call{"Grow(16 TiB - 1 MiB)", func() error { return b.TryGrow(n) }, func() { b.Grow(n) }, ErrAddressSpace},
			call{"NewBuffer(16 TiB - 1 MiB)", func() error { _, err := h.TryNewBuffer(n); return err }, func() { h.NewBuffer(n) }, ErrAddressSpace})
	}
	for _, c := range calls {
		if err := c.try(); !only(err, c.want) {
			t.Errorf("Try%s: %v, want only %v", c.name, err, c.want)
		}
		if err := recoverError(t, c.plain); !only(err, c.want) {
			t.Errorf("%s panicked with %v, want only %v", c.name, err, c.want)
		}
		if b.String() != "kept" {
			t.Fatalf("after %s: %q", c.name, b.String())
		}
	}
	b.Free()

	// On a closed heap: a Buffer without a block, and a new one of any size.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 100} {
		name := fmt.Sprintf("NewBuffer(%d) after Close", size)
		if nb, err := h.TryNewBuffer(size); !only(err, ErrClosed) || nb != nil {
			t.Errorf("Try%s: a Buffer %t, %v; want none, ErrClosed", name, nb != nil, err)
		}
		if err := recoverError(t, func() { h.NewBuffer(size) }); !only(err, ErrClosed) {
			t.Errorf("%s panicked with %v, want ErrClosed", name, err)
		}
	}
	if err := b.TryGrow(10); !only(err, ErrClosed) {
		t.Errorf("TryGrow after Close: %v, want ErrClosed", err)
	}
	if _, err := b.WriteString("x"); !only(err, ErrClosed) {
		t.Errorf("WriteString after Close: %v, want ErrClosed", err)
	}
}
