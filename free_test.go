package offheap

import (
	"strings"
	"testing"
	"unsafe"
)

// wantRefused fails the test unless f panics with a message that starts
// "offheap:" and contains every one of wants.
func wantRefused(t *testing.T, what string, f func(), wants ...string) {
	t.Helper()
	msg := sharedPanic(f)
	if !strings.HasPrefix(msg, "offheap:") {
		t.Errorf("%s: panic %q, want one starting \"offheap:\"", what, msg)
		return
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: panic %q, want it to say %q", what, msg, w)
		}
	}
}

// TestFreeArenaMemory: Free and Realloc of an arena's memory (a chunk's
// start, which is its first allocation; any allocation inside a chunk; a
// chunk of its own; the per-P array) panic, naming the arena, and leave the
// arena and the heap as they were: the heap never hands out the arena's
// memory. Before the fix the heap took the chunk back under the live arena.
func TestFreeArenaMemory(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			a := h.NewArena()
			defer a.Release()
			var r recorder
			first := a.Alloc(64)
			r.add(t, first)
			for i := range 500 {
				r.add(t, a.Alloc(1+i%300))
			}
			own := a.Alloc(100_000) // a chunk of its own
			r.add(t, own)
			inner := bytesAt(r.recs[200].addr, r.recs[200].n)
			procs := bytesAt(addrOf(unsafe.Slice((*byte)(unsafe.Pointer(a.procs.Load())), 1)), 8)
			cases := map[string][]byte{"first allocation (a chunk's start)": first, "inner allocation": inner,
				"chunk of its own": own, "per-P array": procs}
			for name, b := range cases {
				wantRefused(t, "Free of an arena's "+name, func() { h.Free(b) }, "belongs to an Arena", "Reset or Release")
				wantRefused(t, "Realloc of an arena's "+name, func() { h.Realloc(b, 10) }, "belongs to an Arena", "Reset or Release")
				wantRefused(t, "Realloc (growing) of an arena's "+name, func() { h.Realloc(b, 200_000) }, "belongs to an Arena")
			}
			// The heap did not take the memory: what it hands out now
			// overlaps no arena allocation, and every pattern holds.
			var heapBlocks [][]byte
			for i := range 2000 {
				b := h.Alloc(16 + i%300) // 16-byte aligned, as checkRecs wants
				heapBlocks = append(heapBlocks, b)
				r.recs = append(r.recs, arenaRec{addrOf(b), len(b), 0})
				for j := range b {
					b[j] = patternByte(0, j)
				}
			}
			r.check(t)
			for _, b := range heapBlocks {
				h.Free(b)
			}
		})
	}
}

// TestFreeSharedBytes: Free and Realloc of a Shared's bytes panic, naming
// the Shared and Release; the handle stays usable.
func TestFreeSharedBytes(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			for _, opts := range [][]SharedOption{nil, {Hot()}, {OnLastRelease(func([]byte) {})}} {
				s := h.NewShared(100, opts...)
				copy(s.Bytes(), "kept")
				wantRefused(t, "Free of a Shared's bytes", func() { h.Free(s.Bytes()) }, "bytes of a Shared", "Release")
				wantRefused(t, "Realloc of a Shared's bytes", func() { h.Realloc(s.Bytes(), 10) }, "bytes of a Shared", "Release")
				if string(s.Bytes()[:4]) != "kept" || s.Refs() != 1 {
					t.Fatalf("the refused Free changed the handle: %q, %d refs", s.Bytes()[:4], s.Refs())
				}
				s.Release()
			}
			// Control: the same offset into a plain block is only "not the
			// start of a block".
			b := h.Alloc(116)
			msg := sharedPanic(func() { h.Free(b[sharedHdr:]) })
			if strings.Contains(msg, "of a Shared") || !strings.Contains(msg, "start of a block") {
				t.Errorf("Free 16 bytes into a plain block: %q", msg)
			}
			h.Free(b)
			if s := h.Stats(); s.InUseBytes != 0 {
				t.Errorf("InUseBytes %d after everything was freed", s.InUseBytes)
			}
		})
	}
}

// TestFreeEmptySlices: the one rule for Free, FreeSlice and Realloc: a
// slice with a capacity is the block it starts, whatever its length; only a
// slice of capacity 0 is no block. Before the fix Free(b[:0]) leaked the
// block.
func TestFreeEmptySlices(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			for _, n := range []int{1, 64, 5000, maxSmall + 1, 1 << 20} {
				h.Free(h.Alloc(n)[:0])
				FreeSlice(h, MakeSlice[int32](h, n)[:0])
				b := h.Alloc(n)
				copy(b, "data")
				nb := h.Realloc(b[:0], n+100) // b's block, none of its bytes kept
				if nb[0] != 0 {
					t.Errorf("Realloc(b[:0], %d) kept a byte of b", n+100)
				}
				h.Free(nb[:0])
				h.Free(nil)
				h.Free(h.Alloc(0)) // capacity 0: no block
				FreeSlice[int64](h, nil)
				if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != s.Frees {
					t.Fatalf("n=%d: an empty slice leaked its block: %d bytes in use, %d allocs, %d frees", n, s.InUseBytes, s.Allocs, s.Frees)
				}
			}
		})
	}
}
