package offheap

// The bug corpus of checked mode: each test runs one bug and demands the
// exact error, then runs the same program without the bug and demands
// silence (the negative control). Where a detector can be switched off, a
// positive control shows the detection comes from it.

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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

func TestCheckedLeak(t *testing.T) {
	h := checkedHeap(t, Options{})
	keep := h.Alloc(100)
	h.Free(h.Alloc(200))
	big := h.Alloc(100_000)
	err := h.Close()
	var le *LeakError
	if !errors.As(err, &le) || len(le.Leaks) != 2 {
		t.Fatalf("Close: %v, want 2 leaks", err)
	}
	want := map[uintptr]int{addrOf(keep): 100, addrOf(big): 100_000}
	for _, l := range le.Leaks {
		if want[l.Addr] != l.Size {
			t.Errorf("leak %+v, want %v", l, want)
		}
		wantStack(t, "leak", l.Stack, "TestCheckedLeak")
	}
	if !strings.HasPrefix(err.Error(), "offheap: leak: 2 blocks (100100 bytes) still live at Close") {
		t.Errorf("message: %s", err)
	}
	// Control: everything freed.
	h = checkedHeap(t, Options{})
	h.Free(h.Alloc(100))
	closeClean(t, h)
}

// TestCheckedLeakAfterReuse: after spans of one class go back to the heap
// and their pages serve spans of another class, Close lists each live block
// once. Ten spans of 32-byte blocks make way for two spans of 1 KiB
// blocks, so eight old span structs are not reused, and one of them still
// describes pages that now hold new blocks. Positive control: with
// closeSmall taking every span struct as current, those structs named the
// new blocks a second time and this test failed.
func TestCheckedLeakAfterReuse(t *testing.T) {
	h := checkedHeap(t, Options{})
	onOneP(t)
	var old [][]byte
	for range 20000 {
		old = append(old, h.Alloc(20)) // 32-byte blocks
	}
	for _, b := range old {
		h.Free(b)
	}
	h.Trim() // the quarantine empties, the spans go back
	live := map[uintptr]bool{}
	for range 120 {
		live[addrOf(h.Alloc(1000))] = true // 1 KiB blocks, on the same pages
	}
	err := h.Close()
	var le *LeakError
	if !errors.As(err, &le) {
		t.Fatalf("Close: %v, want leaks", err)
	}
	seen := map[uintptr]bool{}
	for _, l := range le.Leaks {
		if !live[l.Addr] || seen[l.Addr] || l.Size != 1000 {
			t.Fatalf("leak %#x (%d bytes): live %v, listed before %v", l.Addr, l.Size, live[l.Addr], seen[l.Addr])
		}
		seen[l.Addr] = true
	}
	if len(seen) != len(live) {
		t.Fatalf("%d leaks listed, %d blocks live", len(seen), len(live))
	}
}

func TestCheckedStats(t *testing.T) {
	withQuarantine(t, 16, 1<<20)
	h := checkedHeap(t, Options{})
	var live [][]byte
	var inUse uint64
	for i := range 1000 {
		n := 1 + i*37%5000
		if i%50 == 0 {
			n = 40_000 + i
		}
		b := h.Alloc(n)
		live = append(live, b)
		inUse += blockBytesChecked(n)
		if i%2 == 1 {
			h.Free(live[0])
			inUse -= blockBytesChecked(len(live[0]))
			live = live[1:]
		}
	}
	s := h.Stats()
	if s.Allocs != 1000 || s.Frees != 500 || s.InUseBytes != inUse ||
		s.MagazineHits+s.LocalHits+s.CentralHits+s.Fresh+s.Large != s.Allocs {
		t.Fatalf("Stats %+v, want 1000 allocs, 500 frees, %d bytes in use", s, inUse)
	}
	for _, b := range live {
		h.Free(b)
	}
	h.Trim() // empties the quarantine
	if s := h.Stats(); s.Frees != 1000 || s.InUseBytes != 0 {
		t.Fatalf("after freeing all: %+v", s)
	}
	closeClean(t, h)
}

// blockBytesChecked is what a checked block of n bytes holds of the heap.
func blockBytesChecked(n int) uint64 {
	if n+canaryLen > maxSmall {
		return uint64((n + canaryLen + pageSize - 1) &^ (pageSize - 1))
	}
	return uint64(classSize[checkedClass(n)])
}

func TestCheckedLimitFlushesQuarantine(t *testing.T) {
	h := checkedHeap(t, Options{Limit: 4 << 20})
	for range 200 { // 20 MB through a 4 MB heap: the quarantine must give way
		b, err := h.TryAlloc(100_000)
		if err != nil {
			t.Fatal(err)
		}
		h.Free(b)
	}
	closeClean(t, h)
}

func TestCheckedAllocStack(t *testing.T) {
	h := checkedHeap(t, Options{})
	b := h.Alloc(300)
	if st := h.allocStack(addrOf(b) + 100); !strings.Contains(st, "TestCheckedAllocStack") {
		t.Fatalf("allocStack: %q", st)
	}
	info, ok := h.Lookup(addrOf(b) + 299)
	if !ok || info.Start != addrOf(b) || info.Size != 300 || info.Freed {
		t.Fatalf("Lookup: %+v %v", info, ok)
	}
	h.Free(b)
	info, ok = h.Lookup(addrOf(b))
	if !ok || !info.Freed || !strings.Contains(info.FreeStack, "TestCheckedAllocStack") {
		t.Fatalf("Lookup after Free: %+v %v", info, ok)
	}
	// Control: a fast heap knows no stacks.
	f := newTestHeap(t, Options{})
	if !buildChecked {
		if st := f.allocStack(addrOf(f.Alloc(300))); st != "" {
			t.Fatalf("fast heap allocStack: %q", st)
		}
	}
}

// TestCheckedStackUnwinder compares the frame-pointer stack with
// runtime.Callers: the cheap unwinder must name the same functions.
func TestCheckedStackUnwinder(t *testing.T) {
	initDepot()
	var fpID, rcID stackID
	func() {
		fpID = callStack()
		rcID = callersStack()
	}()
	if fpID == 0 || rcID == 0 {
		t.Fatalf("stack ids %d and %d", fpID, rcID)
	}
	fp, rc := *stackEntry(fpID), *stackEntry(rcID)
	if framePointers {
		// The walker's own hash must be the one stack.hash computes, or a
		// stack interned both ways would be stored twice.
		var s stack
		n, h := fpStack(&s.pcs)
		s.n = int32(n)
		if n < 3 || h != s.hash() {
			t.Fatalf("fpStack: %d frames, hash %#x, stack.hash %#x", n, h, s.hash())
		}
	}
	names := func(s *stack) []string {
		var out []string
		fr := runtime.CallersFrames(s.frames())
		for {
			f, more := fr.Next()
			// runtime.Callers elides wrappers; the heap's frames are
			// dropped when a stack is printed.
			if !internalFrame(f.Function) && !strings.Contains(f.Function, ".gowrap") {
				out = append(out, f.Function)
			}
			if !more {
				return out
			}
		}
	}
	a, b := names(&fp), names(&rc)
	if !strings.Contains(strings.Join(a, " "), "TestCheckedStackUnwinder") {
		t.Fatalf("frame-pointer stack %v", a)
	}
	if len(a) < 3 || strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("frame pointers: %v\nruntime.Callers: %v", a, b)
	}
}

func TestCheckedConcurrent(t *testing.T) {
	h := checkedHeap(t, Options{})
	const workers, rounds = 4, 2000
	ch := make(chan []byte, 64)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(2)
		go func() { // allocates, and hands half its blocks to a freer
			defer wg.Done()
			var mine [][]byte
			for i := range rounds {
				b := h.Alloc(1 + (i*31+w)%3000)
				b[0] = byte(i)
				if i%2 == 0 {
					ch <- b
				} else {
					mine = append(mine, b)
				}
				if len(mine) > 8 {
					h.Free(mine[0])
					mine = mine[1:]
				}
			}
			for _, b := range mine {
				h.Free(b)
			}
		}()
		go func() { // frees blocks other goroutines allocated
			defer wg.Done()
			for range rounds / 2 {
				h.Free(<-ch)
			}
		}()
	}
	wg.Wait()
	if s := h.Stats(); s.Allocs != workers*rounds || s.Frees != s.Allocs || s.InUseBytes != 0 {
		t.Fatalf("Stats %+v", s)
	}
	closeClean(t, h)
}

func TestErrorKindString(t *testing.T) {
	for k, want := range map[ErrorKind]string{DoubleFree: "double free", InvalidFree: "invalid free",
		ForeignFree: "foreign free", WriteAfterFree: "write after free", Corrupted: "corrupted block", 0: "ErrorKind(0)"} {
		if k.String() != want {
			t.Errorf("%d: %q, want %q", int(k), k, want)
		}
	}
}

func TestSampleRateOffCostsNothing(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode's magazines decline every allocation: TestCheckedMagazinesDecline")
	}
	h := newTestHeap(t, Options{ProfileBytes: -1})
	h.Free(h.Alloc(64)) // installs this P's magazine
	for _, m := range h.mags.all {
		for c := 1; c < numClasses; c++ {
			if m.cls[c].sampleAt != math.MaxUint64 {
				t.Fatalf("class %d: sampleAt %d in a heap that does not sample", c, m.cls[c].sampleAt)
			}
		}
	}
	if h.chk != nil {
		t.Fatal("fast heap has a checker")
	}
}

// TestCheckedSampleRate is a checked heap that also samples: its small
// blocks are small blocks or guarded ones, and both kinds are checked.
func TestCheckedSampleRate(t *testing.T) {
	h := checkedHeap(t, Options{GuardOneIn: 3})
	guarded := 0
	for i := range 300 {
		b := h.Alloc(1 + i%200)
		info, ok := h.Lookup(addrOf(b))
		if !ok || info.Size != len(b) {
			t.Fatalf("Lookup: %+v %v", info, ok)
		}
		if info.Guarded {
			guarded++
		}
		h.Free(b)
		if me := memoryError(t, func() { h.Free(b) }); me.Kind != DoubleFree {
			t.Fatalf("double free: %v", me)
		}
	}
	if guarded < 50 || guarded > 150 {
		t.Fatalf("%d of 300 guarded at GuardOneIn 3", guarded)
	}
	closeClean(t, h)
}

// TestCheckedDepot checks the stack depot: one id per distinct stack, the
// same id for a stack seen again or by many goroutines at once, and no stack
// for an id it never gave.
func TestCheckedDepot(t *testing.T) {
	initDepot()
	var ids [3]stackID
	for i := range ids {
		ids[i] = callStack() // the same stack every time
	}
	other := callStack()
	if ids[0] == 0 || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("one stack, ids %v", ids)
	}
	if other == 0 || other == ids[0] {
		t.Fatalf("two stacks, ids %d and %d", ids[0], other)
	}
	if st := ids[0].String(); !strings.Contains(st, "TestCheckedDepot") {
		t.Fatalf("stack %q does not name the test", st)
	}
	if stackID(0).String() != "" || stackID(^uint32(0)).String() != "" {
		t.Fatal("an id the depot never gave has a stack")
	}

	// A stack no one has seen, interned by many goroutines at once.
	var s stack
	s.n = 3
	s.pcs[0], s.pcs[1], s.pcs[2] = uintptr(unsafe.Pointer(&s)), 2, 3
	const g = 8
	got := make([]stackID, g)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = intern(&s, s.hash()) })
	}
	wg.Wait()
	for _, id := range got {
		if id == 0 || id != got[0] {
			t.Fatalf("one new stack interned at once: ids %v", got)
		}
	}
	if e := stackEntry(got[0]); e.n != 3 || e.pcs != s.pcs {
		t.Fatalf("depot entry %v, want %v", e.pcs[:e.n], s.pcs[:3])
	}
}

// TestPoisonWords checks the poison check on its own: for every class
// size, one byte changed anywhere in a poisoned block is found, whatever
// the value written, and a block left alone is not reported. (Positive
// control: with the differences of a word pair combined as
// p[0]^w | p[1]^w, which Go reads as ((p[0]^w)|p[1])^w, a zero written
// into an even word was missed, and this test failed.)
func TestPoisonWords(t *testing.T) {
	buf := make([]uint64, maxSmall/8)
	a := uintptr(unsafe.Pointer(&buf[0]))
	for cl := 1; cl < numClasses; cl++ {
		n := classSize[cl]
		b := bytesAt(a, int(n))
		poisonWords(a, n)
		if !poisonedWords(a, n) {
			t.Fatalf("class size %d: fresh poison reported as written", n)
		}
		step := max(int(n)/97, 1) // every byte of the small classes
		for i := 0; i < int(n); i += step {
			for _, v := range []byte{0, 1, poisonByte ^ 0x80, 0xff} {
				b[i] = v
				if poisonedWords(a, n) {
					t.Fatalf("class size %d: byte %d set to %#x not found", n, i, v)
				}
				b[i] = poisonByte
			}
		}
		if !poisonedWords(a, n) || !poisoned(b) {
			t.Fatalf("class size %d: poison restored, still reported", n)
		}
	}
	runtime.KeepAlive(buf) // a is a uintptr: without this the collector may free buf, and the next owner write it
}

// TestCheckedMagazinesDecline: a checked heap's magazines hold blocks, which
// the checker takes, yet the fast path declines every allocation, since
// take keeps sampleAt equal to hits. Positive control: with sampleAt moved
// past hits, the fast path pops a block the checker never saw.
func TestCheckedMagazinesDecline(t *testing.T) {
	withQuarantine(t, 1, 1<<20) // freed blocks reach the magazine at once
	h := checkedHeap(t, Options{})
	var bs [][]byte
	for range 64 {
		bs = append(bs, h.Alloc(64))
	}
	for _, b := range bs {
		h.Free(b)
	}
	cl := checkedClass(64)
	n := int(classSize[cl])
	stocked := 0
	for _, m := range h.mags.all {
		mc := &m.cls[cl]
		stocked += int(mc.n)
		if mc.hits != mc.sampleAt {
			t.Fatalf("class %d: sampleAt %d, hits %d", cl, mc.sampleAt, mc.hits)
		}
	}
	if stocked == 0 {
		t.Fatal("no block of the class in any magazine: the test cannot tell")
	}
	for range 2 * stocked {
		if a := h.allocFast(n); a != 0 {
			t.Fatalf("the fast path took %#x from a checked heap's magazine", a)
		}
	}
	for _, m := range h.mags.all {
		m.cls[cl].sampleAt++
	}
	a := h.allocFast(n)
	for _, m := range h.mags.all {
		m.cls[cl].sampleAt--
	}
	if a == 0 {
		t.Fatal("control: with sampleAt past hits the fast path still declined")
	}
}

// TestCheckedLeakRuns: Close finds the leaks of page runs too, large blocks
// and guarded ones, by walking the pagemap, in regions after the first as in
// region 0; a run freed, and one an arena holds, is none.
func TestCheckedLeakRuns(t *testing.T) {
	for _, opts := range []Options{{}, {GuardPages: true}} {
		opts.Checked = true
		h := newTestHeapFirstRegion(t, opts, 4<<20)
		var want []int
		for _, n := range []int{400_000, 3 << 20, 300_000} { // the second fills region 0: a later region
			h.Alloc(n)
			want = append(want, n)
		}
		h.Free(h.Alloc(500_000))
		a := h.NewArena()
		a.Alloc(100)
		if h.regionCount() < 2 {
			t.Fatalf("%+v: %d region: the test needs a later one", opts, h.regionCount())
		}
		err := h.Close()
		var le *LeakError
		if !errors.As(err, &le) || len(le.Leaks) != len(want) {
			t.Fatalf("%+v: Close: %v, want %d leaks", opts, err, len(want))
		}
		got := map[int]bool{}
		for _, l := range le.Leaks {
			got[l.Size] = true
			wantStack(t, "leak", l.Stack, "TestCheckedLeakRuns")
		}
		for _, n := range want {
			if !got[n] {
				t.Errorf("%+v: no leak of %d bytes in %v", opts, n, le.Leaks)
			}
		}
	}
}

// TestCheckedRacingDoubleFree: two Frees of one block at once, small, large
// or guarded: the record's compare-and-swap lets exactly one proceed, and
// the other panics with DoubleFree.
func TestCheckedRacingDoubleFree(t *testing.T) {
	for _, c := range []struct {
		opts Options
		n    int
	}{{Options{}, 64}, {Options{}, 400_000}, {Options{GuardPages: true}, 64}} {
		h := checkedHeap(t, c.opts)
		for range 100 {
			b := h.Alloc(c.n)
			var panics atomic.Int32
			var start, done sync.WaitGroup
			start.Add(1)
			for range 2 {
				done.Go(func() {
					defer func() {
						if r := recover(); r != nil {
							var me *MemoryError
							if err, ok := r.(error); !ok || !errors.As(err, &me) || me.Kind != DoubleFree {
								t.Errorf("%d bytes %+v: panic %v, want a double free", c.n, c.opts, r)
							}
							panics.Add(1)
						}
					}()
					start.Wait()
					h.Free(b)
				})
			}
			start.Done()
			done.Wait()
			if p := panics.Load(); p != 1 {
				t.Fatalf("%d bytes %+v: %d of two racing Frees panicked, want 1", c.n, c.opts, p)
			}
		}
		closeClean(t, h)
	}
}

// TestCheckerSeam holds checked.go's description to the code: of the files
// that are not the checker's (checked*.go), only the seam's name the
// checker's field.
func TestCheckerSeam(t *testing.T) {
	seam := map[string]bool{"alloc.go": true, "free.go": true, "heap.go": true, "closing.go": true, "census.go": true}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	chk := regexp.MustCompile(`\.chk\b`)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "checked") || seam[name] {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if chk.Match(src) {
			t.Errorf("%s names the checker's field (.chk): reach the checker through a method of a checked*.go file (checked.go)", name)
		}
	}
}
