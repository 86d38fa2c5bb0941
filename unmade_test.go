package offheap

import (
	"errors"
	"strings"
	"testing"
)

// TestUnmadeHeap: a call on a heap NewHeap did not make (a nil *Heap, a
// zero Heap) or on the zero Buffer or Arena fails with an error that names
// the mistake, returned or as a panic the caller can recover, and harms no
// other heap. A nil heap used to reach a pinned section, where the runtime
// cannot turn a fault into a panic and kills the process; the controls
// (allocFast without its nil check, enter without made) kill the test
// binary at the first case that reaches one.
func TestUnmadeHeap(t *testing.T) {
	var nilHeap *Heap
	var zero Heap
	const unmade, zeroBuffer, zeroArena = "not made by NewHeap", "the zero Buffer has no heap", "Arena: no heap"
	for _, tc := range []struct {
		name, want string
		panics     bool
		call       func() error
	}{
		{"nil Alloc", unmade, true, func() error { nilHeap.Alloc(10); return nil }},
		{"nil Alloc large", unmade, true, func() error { nilHeap.Alloc(1 << 20); return nil }},
		{"nil AllocUnzeroed", unmade, true, func() error { nilHeap.AllocUnzeroed(100); return nil }},
		{"nil TryAlloc", unmade, false, func() error { _, err := nilHeap.TryAlloc(10); return err }},
		{"nil TryAllocUnzeroed", unmade, false, func() error { _, err := nilHeap.TryAllocUnzeroed(100); return err }},
		{"nil MakeSlice", unmade, true, func() error { MakeSlice[int64](nilHeap, 4); return nil }},
		{"nil Realloc", unmade, true, func() error { nilHeap.Realloc(nil, 10); return nil }},
		{"nil RelocateAll", unmade, true, func() error { nilHeap.RelocateAll([][]byte{make([]byte, 8)}); return nil }},
		{"nil Trim", unmade, true, func() error { nilHeap.Trim(); return nil }},
		{"nil TryNewBuffer", unmade, false, func() error { _, err := nilHeap.TryNewBuffer(10); return err }},
		{"nil TryNewLocal", unmade, false, func() error { _, err := nilHeap.TryNewLocal(); return err }},
		{"nil NewArena's Alloc", zeroArena, true, func() error { nilHeap.NewArena().Alloc(10); return nil }},
		{"nil Close", unmade, false, func() error { return nilHeap.Close() }},
		{"zero Alloc", unmade, true, func() error { zero.Alloc(10); return nil }},
		{"zero Free", unmade, true, func() error { zero.Free(make([]byte, 8)); return nil }},
		{"zero Trim", unmade, true, func() error { zero.Trim(); return nil }},
		{"zero Close", unmade, false, func() error { return zero.Close() }},
		{"zero Buffer's WriteString", zeroBuffer, false, func() error { var b Buffer; _, err := b.WriteString("x"); return err }},
		{"zero Buffer's Grow", zeroBuffer, true, func() error { var b Buffer; b.Grow(1); return nil }},
		{"zero Arena's Alloc", zeroArena, true, func() error { var a Arena; a.Alloc(1); return nil }},
		{"zero Arena's TryAlloc", zeroArena, false, func() error { var a Arena; _, err := a.TryAlloc(1); return err }},
	} {
		var err error
		if tc.panics {
			err = errors.New(mustPanic(t, func() { tc.call() }))
		} else if err = tc.call(); err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "offheap: ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q, want an offheap error naming %q", tc.name, msg, tc.want)
		}
	}
	h := newTestHeap(t, Options{})
	b := h.Alloc(100)
	h.Free(b)
	if s := h.Stats(); s.Allocs != 1 || s.Frees != 1 || s.InUseBytes != 0 {
		t.Fatalf("a heap made by NewHeap beside the misuse: %+v", s)
	}
}
