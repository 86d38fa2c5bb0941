package offheap

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// onePrefix fails the test unless msg starts "offheap:" and says it once:
// an error wrapped twice with the prefix reads "offheap: X: offheap: ...".
func onePrefix(t *testing.T, what, msg string) {
	t.Helper()
	if !strings.HasPrefix(msg, "offheap:") || strings.Count(msg, "offheap:") != 1 {
		t.Errorf("%s: %q, want one \"offheap:\", at the start", what, msg)
	}
}

// TestTryNewLocal: TryNewLocal makes a Local as NewLocal does; after the
// heap's Close it returns ErrClosed, where NewLocal panics with the same
// error, prefixed once and naming the call.
func TestTryNewLocal(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			c, err := h.TryNewLocal()
			if err != nil || c == nil {
				t.Fatalf("TryNewLocal: %v", err)
			}
			c.Free(c.Alloc(64))
			c.Close()
			h.Close()
			c, err = h.TryNewLocal()
			if !errors.Is(err, ErrClosed) || c != nil {
				t.Fatalf("TryNewLocal after the heap's Close: %v, %v; want ErrClosed", c, err)
			}
			onePrefix(t, "TryNewLocal's error", err.Error())
			if !strings.Contains(err.Error(), "TryNewLocal after the heap's Close") {
				t.Errorf("TryNewLocal's error %q does not name the call", err)
			}
			// The plain form panics with it.
			err = closedErr(func() error { h.NewLocal(); return nil })
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("NewLocal after the heap's Close: %v, want a panic wrapping ErrClosed", err)
			}
			onePrefix(t, "NewLocal's panic", err.Error())
			if !strings.Contains(err.Error(), "NewLocal after the heap's Close") {
				t.Errorf("NewLocal's panic %q does not name the call", err)
			}
		})
	}
}

// TestTryNewLocalLimit: a Local's stacks are the heap's metadata, outside
// its Limit, so TryNewLocal succeeds in a heap at its Limit; the Local's
// TryAlloc then returns ErrLimit and its Alloc panics with it.
func TestTryNewLocalLimit(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 8 << 20})
	var held [][]byte
	for {
		b, err := h.TryAlloc(1 << 20)
		if err != nil {
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("filling the heap: %v, want ErrLimit", err)
			}
			break
		}
		held = append(held, b)
	}
	c, err := h.TryNewLocal()
	if err != nil {
		t.Fatalf("TryNewLocal at the Limit: %v", err)
	}
	defer c.Close()
	if b, err := c.TryAlloc(1 << 20); !errors.Is(err, ErrLimit) || b != nil {
		t.Fatalf("Local.TryAlloc past the Limit: %d bytes, %v; want ErrLimit", len(b), err)
	}
	msg := mustPanic(t, func() { c.Alloc(1 << 20) })
	onePrefix(t, "Local.Alloc past the Limit", msg)
	for _, b := range held {
		h.Free(b)
	}
	// Positive control: with the memory back, the same call succeeds.
	b, err := c.TryAlloc(1 << 20)
	if err != nil {
		t.Fatalf("Local.TryAlloc with room: %v", err)
	}
	c.Free(b)
}

// TestTryNewLocalMapRefused: where the system refuses the mapping for a
// Local's stacks, TryNewLocal returns stateMapError's error:
// ErrAddressSpace wrapping the system's errno, once prefixed, naming the
// call and ending with the way out. (A refusal cannot be made to happen
// here without limiting the whole test process's memory, so the error is
// built from one.)
func TestTryNewLocalMapRefused(t *testing.T) {
	err := stateMapError("TryNewLocal", fmt.Errorf("offheap: mapping 4096 bytes: %w", syscall.ENOMEM))
	if !errors.Is(err, ErrAddressSpace) || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("stateMapError: %v; want ErrAddressSpace wrapping ENOMEM", err)
	}
	onePrefix(t, "TryNewLocal's error", err.Error())
	if !strings.Contains(err.Error(), "TryNewLocal: the system refused") || !strings.HasSuffix(err.Error(), "or use the Heap") {
		t.Errorf("TryNewLocal's error %q does not name the call, the cause and the way out", err)
	}
}
