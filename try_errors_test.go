package offheap

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// tryRecovered is what a Try form built on its panicking call (TryRealloc,
// TryNewShared) makes of a panic with v: the error it returns.
func tryRecovered(v any) (err error) {
	defer recoverAllocError(&err)
	panic(v)
}

// TestTryRecoversSystemRefusal: a Try form built on its panicking call
// returns every error TryAlloc returns, the system's refusal to map or
// commit memory (an errno, wrapped) included, and lets misuse panic on.
func TestTryRecoversSystemRefusal(t *testing.T) {
	refused := fmt.Errorf("offheap: mprotect %#x+%d: %w", 0x1000, 4096, syscall.ENOMEM)
	for _, e := range []error{
		refused,
		fmt.Errorf("%w: %w", pageheap.ErrNoMeta, refused), // checked mode's metadata
		fmt.Errorf("%w: 64 MiB more", ErrLimit),
		closedError("Realloc"),
		fmt.Errorf("%w: negative size -1", ErrSize),
		fmt.Errorf("%w: the heap spans 1 TiB", ErrAddressSpace),
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("a panic with %q: not recovered", e)
				}
			}()
			if err := tryRecovered(e); err != e {
				t.Errorf("a panic with %q: returned %v", e, err)
			}
		}()
	}
	// Positive control: misuse is no allocation error, and panics on.
	for _, v := range []any{
		errors.New("offheap: Realloc of a block already freed"),
		"offheap: Realloc of a block already freed",
	} {
		if msg := mustPanic(t, func() { _ = tryRecovered(v) }); msg != fmt.Sprint(v) {
			t.Errorf("misuse %q panicked with %q", v, msg)
		}
	}
}

// TestTryTypedClosed: on a closed heap TryNew, TryMakeSlice and
// TryReallocSlice return ErrClosed, where New, MakeSlice and ReallocSlice
// panic with it.
func TestTryTypedClosed(t *testing.T) {
	h := newTestHeap(t, Options{})
	s := MakeSlice[int64](h, 10)
	h.Close()
	if p, err := TryNew[[4]int64](h); !errors.Is(err, ErrClosed) || p != nil {
		t.Errorf("TryNew on a closed heap: %v, want ErrClosed", err)
	}
	if x, err := TryMakeSlice[int64](h, 10); !errors.Is(err, ErrClosed) || x != nil {
		t.Errorf("TryMakeSlice on a closed heap: %v, want ErrClosed", err)
	}
	if x, err := TryReallocSlice(h, s, 20); !errors.Is(err, ErrClosed) || x != nil {
		t.Errorf("TryReallocSlice on a closed heap: %v, want ErrClosed", err)
	}
	// Positive control: the plain forms panic, saying "offheap:" first.
	mustPanic(t, func() { New[[4]int64](h) })
	mustPanic(t, func() { MakeSlice[int64](h, 10) })
	mustPanic(t, func() { ReallocSlice(h, s, 20) })
}
