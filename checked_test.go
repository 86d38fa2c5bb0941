package offheap

// The bug corpus of checked mode: each test runs one bug and demands the
// exact error, then runs the same program without the bug and demands
// silence (the negative control). Where a detector can be switched off, a
// positive control shows the detection comes from it.

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// checkedHeap is a checked heap closed at the end of the test (its Close
// error is the test's business when it matters).
func checkedHeap(t testing.TB, opts Options) *Heap {
	t.Helper()
	opts.Checked = true
	h, err := NewHeap(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if q := testQuarantine; q.on {
		h.setQuarantine(q.blocks, q.bytes)
	}
	return h
}

// memoryError runs f and returns the *MemoryError it panics with; it fails
// the test if f does not panic with one.
func memoryError(t *testing.T, f func()) (me *MemoryError) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.As(err, &me) {
			t.Fatalf("panic %v (%T), want a *MemoryError", r, r)
		}
	}()
	f()
	return nil
}

// noPanic runs f and fails the test if it panics.
func noPanic(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r != nil {
			t.Fatalf("unexpected panic: %v", r)
		}
	}()
	f()
}

// closeClean closes h and fails the test unless Close reports nothing.
func closeClean(t *testing.T, h *Heap) {
	t.Helper()
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// testQuarantine, when on, bounds the quarantine rings of the heaps
// checkedHeap makes (setQuarantine): withQuarantine sets it for one test.
var testQuarantine struct {
	on            bool
	blocks, bytes int
}

func withQuarantine(t *testing.T, blocks, bytes int) {
	testQuarantine.on, testQuarantine.blocks, testQuarantine.bytes = true, blocks, bytes
	t.Cleanup(func() { testQuarantine.on = false })
}

// onOneP runs the test with GOMAXPROCS 1, for tests that count on the
// per-P quarantine ring of the P they started on.
func onOneP(t *testing.T) {
	t.Cleanup(func(n int) func() { return func() { runtime.GOMAXPROCS(n) } }(runtime.GOMAXPROCS(1)))
}

// wantStack fails the test unless stack names the function fn.
func wantStack(t *testing.T, what, stack, fn string) {
	t.Helper()
	if !strings.Contains(stack, fn) {
		t.Errorf("%s stack does not name %s:\n%s", what, fn, stack)
	}
	if strings.Contains(stack, "allocSlow") || strings.Contains(stack, "(*checker)") {
		t.Errorf("%s stack shows the heap's own frames:\n%s", what, stack)
	}
}

var corpusSizes = []int{1, 64, 100, 100_000, maxSmall - 4, maxSmall, maxSmall + 100_000}

func TestCheckedDoubleFree(t *testing.T) {
	for _, n := range corpusSizes {
		h := checkedHeap(t, Options{})
		b := h.Alloc(n)
		h.Free(b)
		me := memoryError(t, func() { h.Free(b) })
		if me.Kind != DoubleFree || me.Addr != addrOf(b) || me.Size != n {
			t.Fatalf("n=%d: %v", n, me)
		}
		wantStack(t, "alloc", me.AllocStack, "TestCheckedDoubleFree")
		wantStack(t, "free", me.FreeStack, "TestCheckedDoubleFree")
		if !strings.HasPrefix(me.Error(), "offheap: double free of 0x") || !strings.Contains(me.Error(), "first freed at:") {
			t.Errorf("message: %s", me.Error())
		}
		closeClean(t, h) // the failed Free left the heap intact

		// Control: one Free.
		h = checkedHeap(t, Options{})
		noPanic(t, func() { h.Free(h.Alloc(n)) })
		closeClean(t, h)
	}
}

func TestCheckedFreeInterior(t *testing.T) {
	for _, n := range corpusSizes {
		if n < 2 {
			continue
		}
		h := checkedHeap(t, Options{})
		b := h.Alloc(n)
		me := memoryError(t, func() { h.Free(b[1:]) })
		if me.Kind != InvalidFree || me.Addr != addrOf(b)+1 || !strings.Contains(me.Error(), "not the start of a block") {
			t.Fatalf("n=%d: %v", n, me)
		}
		wantStack(t, "alloc", me.AllocStack, "TestCheckedFreeInterior")
		noPanic(t, func() { h.Free(b) }) // control: the real start
		closeClean(t, h)
	}
}

// goHeapSlice is on the Go heap (a slice on the stack could move while the
// test recovers, and its address with it).
var goHeapSlice = make([]byte, 64)

func TestCheckedFreeGoMemory(t *testing.T) {
	h := checkedHeap(t, Options{})
	goSlice := goHeapSlice
	me := memoryError(t, func() { h.Free(goSlice) })
	if me.Kind != InvalidFree || me.Addr != addrOf(goSlice) {
		t.Fatalf("%v", me)
	}
	// Control: a slice of the heap.
	noPanic(t, func() { h.Free(h.Alloc(64)) })
	closeClean(t, h)
}

func TestCheckedForeignFree(t *testing.T) {
	h := checkedHeap(t, Options{})
	other := checkedHeap(t, Options{})
	ob := other.Alloc(48)
	me := memoryError(t, func() { h.Free(ob) })
	if me.Kind != ForeignFree || me.Size != 48 {
		t.Fatalf("%v", me)
	}
	wantStack(t, "alloc", me.AllocStack, "TestCheckedForeignFree")
	// Control: each block into its own heap.
	noPanic(t, func() { other.Free(ob); h.Free(h.Alloc(48)) })
	closeClean(t, h)
	closeClean(t, other)
}

func TestCheckedWriteAfterFree(t *testing.T) {
	const q = 8
	// restore, the positive control: the write puts back what it
	// overwrote, which the poison check cannot tell from no write.
	run := func(t *testing.T, n int, bug, restore bool) *MemoryError {
		h := checkedHeap(t, Options{})
		b := h.Alloc(n)
		h.Free(b)
		if bug {
			b[n/2] = 1 // the write after free
		}
		if restore {
			b[n/2] = poisonByte
		}
		var me *MemoryError
		// Push b out of the quarantine with blocks of its own kind: small
		// blocks wait in their P's ring, large ones in the heap's FIFO.
		m := 16
		if n > maxSmall-canaryLen {
			m = n
		}
		for range q + 1 {
			if bug && me == nil {
				func() {
					defer func() {
						if r := recover(); r != nil {
							if err, ok := r.(error); !ok || !errors.As(err, &me) {
								panic(r)
							}
						}
					}()
					h.Free(h.Alloc(m))
				}()
			} else {
				h.Free(h.Alloc(m))
			}
		}
		closeClean(t, h)
		return me
	}
	withQuarantine(t, q, 1<<20)
	onOneP(t) // the small blocks' quarantine is per P: stay on one
	for _, n := range []int{16, 1000, 100_000} {
		me := run(t, n, true, false)
		if me == nil || me.Kind != WriteAfterFree || me.Size != n {
			t.Fatalf("n=%d: %v, want a write after free", n, me)
		}
		wantStack(t, "alloc", me.AllocStack, "TestCheckedWriteAfterFree")
		wantStack(t, "free", me.FreeStack, "TestCheckedWriteAfterFree")
		if me := run(t, n, false, false); me != nil { // control: no write
			t.Fatalf("n=%d: control: %v", n, me)
		}
	}
	// Positive control: a write that leaves the poison as it was goes
	// unseen, so it is the poison check that catches the bug.
	for _, n := range []int{16, 1000, 100_000} {
		if me := run(t, n, true, true); me != nil {
			t.Fatalf("n=%d: poison restored, yet: %v", n, me)
		}
	}
}

func TestCheckedWriteAfterFreeAtClose(t *testing.T) {
	h := checkedHeap(t, Options{})
	b := h.Alloc(100)
	h.Free(b)
	b[0] = 7
	err := h.Close()
	var me *MemoryError
	if !errors.As(err, &me) || me.Kind != WriteAfterFree {
		t.Fatalf("Close: %v, want a write after free", err)
	}
	var le *LeakError
	if errors.As(err, &le) {
		t.Fatalf("Close reports leaks: %v", le)
	}
	// Control.
	h = checkedHeap(t, Options{})
	h.Free(h.Alloc(100))
	closeClean(t, h)
}

// pastLen is b extended k bytes past its length: an unsafe write through
// it is the bug Corrupted catches.
func pastLen(b []byte, k int) []byte { return unsafe.Slice(unsafe.SliceData(b), len(b)+k) }

func TestCheckedWritePastLen(t *testing.T) {
	for _, n := range corpusSizes {
		for _, opts := range []Options{{}, {GuardPages: true}} {
			h := checkedHeap(t, opts)
			b := h.Alloc(n)
			if opts.GuardPages && (n+15)&^15 == n {
				// No slack before the guard page: the write would fault
				// (TestGuardFaults covers that).
				h.Free(b)
				closeClean(t, h)
				continue
			}
			// Flip the byte rather than store a constant, which matches the
			// canary (random per heap) one time in 256.
			pastLen(b, 1)[n] ^= 0xff
			me := memoryError(t, func() { h.Free(b) })
			if me.Kind != Corrupted || me.Size != n || !strings.Contains(me.Error(), "past its length") {
				t.Fatalf("n=%d %+v: %v", n, opts, me)
			}
			wantStack(t, "alloc", me.AllocStack, "TestCheckedWritePastLen")
			// The block was freed nonetheless: no leak, no second report.
			closeClean(t, h)

			h = checkedHeap(t, opts) // control: writes up to len only
			b = h.Alloc(n)
			for i := range b {
				b[i] = 0x42
			}
			noPanic(t, func() { h.Free(b) })
			closeClean(t, h)
		}
	}
}

func TestCheckedCorruptedMetadata(t *testing.T) {
	// A small block, a large one and a guarded one: their records are all
	// in the record table.
	for _, c := range []struct {
		opts Options
		n    int
	}{{Options{}, 64}, {Options{}, 400_000}, {Options{GuardPages: true}, 100}} {
		h := checkedHeap(t, c.opts)
		b := h.Alloc(c.n)
		r, _, _ := h.chk.smallRecord(addrOf(b))
		if c.n > maxSmall || c.opts.GuardPages {
			r = h.chk.rec(addrOf(b))
		}
		r.size = 1 << 20 // a stray write into the record table
		me := memoryError(t, func() { h.Free(b) })
		if me.Kind != Corrupted || !strings.Contains(me.Error(), "metadata") {
			t.Fatalf("%d bytes %+v: %v", c.n, c.opts, me)
		}
		// Control: an untouched record frees.
		noPanic(t, func() { h.Free(h.Alloc(c.n)) })
	}
}
