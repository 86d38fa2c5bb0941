package offheap

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestLimit(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			const limit = 4 << 20
			h := newTestHeap(t, Options{MagazineDepth: arm.opts.MagazineDepth, Limit: limit})
			var live [][]byte
			var err error
			for {
				var b []byte
				if b, err = h.TryAlloc(100_000); err != nil {
					break
				}
				live = append(live, b)
			}
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("TryAlloc past the limit: %v, want ErrLimit", err)
			}
			if s := h.Stats(); s.MappedBytes > limit {
				t.Fatalf("MappedBytes %d above Limit %d", s.MappedBytes, limit)
			}
			if len(live) < limit/100_000/2 {
				t.Fatalf("only %d blocks of 100000 bytes fit in %d", len(live), limit)
			}
			if msg := mustPanic(t, func() { h.Alloc(100_000) }); !strings.Contains(msg, "limit") {
				t.Errorf("Alloc past the limit: %q", msg)
			}
			// Small blocks hit the same limit.
			var small [][]byte
			for {
				b, err := h.TryAlloc(64)
				if err != nil {
					if !errors.Is(err, ErrLimit) {
						t.Fatalf("small TryAlloc past the limit: %v", err)
					}
					break
				}
				small = append(small, b)
			}
			// The heap stays usable: free some, allocate again.
			for _, b := range live {
				h.Free(b)
			}
			for _, b := range small {
				h.Free(b)
			}
			b, err := h.TryAlloc(100_000)
			if err != nil {
				t.Fatalf("after freeing, TryAlloc: %v", err)
			}
			h.Free(b)
			if s := h.Stats(); s.InUseBytes != 0 {
				t.Fatalf("InUseBytes = %d after freeing everything", s.InUseBytes)
			}
		})
	}
}

// TestLimitErrorSays: the limit's refusal names the request, what it
// needed mapped, what is mapped and the Limit, and is still ErrLimit, for
// a large and a small block of a fast and a checked heap, and for an
// Arena's.
func TestLimitErrorSays(t *testing.T) {
	for _, opts := range []Options{{Limit: 1 << 20}, {Limit: 1 << 20, Checked: true}} {
		h := newTestHeap(t, opts)
		_, err := h.TryAlloc(2 << 20)
		want := fmt.Sprintf("offheap: heap limit reached: an allocation of %d bytes needs", 2<<20)
		if !errors.Is(err, ErrLimit) || !strings.HasPrefix(fmt.Sprint(err), want) ||
			!strings.Contains(fmt.Sprint(err), fmt.Sprintf("of the Limit's %d bytes are mapped", 1<<20)) ||
			!strings.HasSuffix(fmt.Sprint(err), "a larger Options.Limit, or allocate with TryAlloc and handle ErrLimit") {
			t.Fatalf("checked=%v: TryAlloc(2 MiB) under a 1 MiB Limit: %v", opts.Checked, err)
		}
		var held [][]byte
		for err = nil; err == nil; {
			var b []byte
			if b, err = h.TryAlloc(64 << 10); err == nil {
				held = append(held, b)
			}
		}
		mapped := h.Stats().MappedBytes
		if msg := fmt.Sprint(err); !strings.Contains(msg, "an allocation of 65536 bytes needs") ||
			!strings.Contains(msg, fmt.Sprintf("and %d of the Limit's", mapped)) {
			t.Fatalf("checked=%v: TryAlloc(64 KiB) with %d bytes mapped: %v", opts.Checked, mapped, err)
		}
		a := h.NewArena()
		if _, err := a.TryAlloc(2 << 20); !errors.Is(err, ErrLimit) || !strings.Contains(fmt.Sprint(err), "an allocation of 2097152 bytes") {
			t.Fatalf("checked=%v: Arena.TryAlloc(2 MiB): %v", opts.Checked, err)
		}
		a.Release()
		for _, b := range held {
			h.Free(b)
		}
	}
}

func TestClose(t *testing.T) {
	h, err := NewHeap(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := h.Alloc(64)
	h.Free(b)
	big := h.Alloc(1 << 20)
	if err := h.Close(); buildChecked {
		// Checked mode reports big as a leak (checked.go).
		var le *LeakError
		if !errors.As(err, &le) || len(le.Leaks) != 1 || le.Leaks[0].Size != 1<<20 {
			t.Fatalf("checked Close: %v, want a LeakError for big", err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, n := range []int{64, 1 << 20} {
		if _, err := h.TryAlloc(n); !errors.Is(err, ErrClosed) {
			t.Errorf("TryAlloc(%d) after Close: %v, want ErrClosed", n, err)
		}
		if msg := mustPanic(t, func() { h.Alloc(n) }); !strings.Contains(msg, "closed") {
			t.Errorf("Alloc(%d) after Close: %q", n, msg)
		}
	}
	if msg := mustPanic(t, func() { h.Free(big) }); !strings.Contains(msg, "closed") {
		t.Errorf("Free after Close: %q", msg)
	}
	h.Trim() // a no-op, not a crash
	if s := h.Stats(); s.Allocs != 2 || s.Frees != 1 {
		t.Errorf("Stats after Close: %+v", s)
	}
}
