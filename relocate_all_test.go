package offheap

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// survivorsInOrder is fragment's survivors as a slice in index order, with
// their indexes.
func survivorsInOrder(keep map[int][]byte) (idx []int, bs [][]byte) {
	for i := range keep {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		bs = append(bs, keep[i])
	}
	return idx, bs
}

// TestRelocateAllMatchesRelocate: over two heaps built alike, with
// magazines off so that where a block goes does not depend on the P that
// asks, RelocateAll of the survivors moves each of them where Relocate,
// called for each in turn, moves its twin, and counts what it counts; nil
// and empty slices and a large block stay, and no class lock is left held.
// Positive control: with RelocateAll's sparse check turned around, they do
// not agree; without its deferred release, the lock check fails.
func TestRelocateAllMatchesRelocate(t *testing.T) {
	if buildChecked {
		t.Skip("checked build: blocks come from the checker")
	}
	var heaps [2]*Heap
	var idx [2][]int
	var bs [2][][]byte
	var want [2]census
	for k := range heaps {
		heaps[k] = newTestHeap(t, unprofiled(Options{MagazineDepth: -1}))
		var keep map[int][]byte
		keep, want[k] = fragment(t, heaps[k], 60_000, rand.New(rand.NewPCG(11, 12)))
		idx[k], bs[k] = survivorsInOrder(keep)
		big := heaps[k].Alloc(maxSmall + 1)
		want[k].allocs++
		want[k].large++
		want[k].inUse += blockBytes(cap(big))
		// Holes a pass leaves for deleted values, and a large block.
		mid := len(bs[k]) / 2
		bs[k] = slices.Insert(bs[k], mid, nil, []byte{}, big)
		idx[k] = slices.Insert(idx[k], mid, -1, -1, -1)
	}
	single, batch := heaps[0], heaps[1]
	var moved [2]int
	for i, b := range bs[0] {
		var ok bool
		if bs[0][i], ok = single.Relocate(b); ok {
			moved[0]++
		}
	}
	orig := slices.Clone(bs[1])
	moved[1] = batch.RelocateAll(bs[1])
	for c := 1; c < numClasses; c++ {
		cen := &batch.central[c]
		if !cen.mu.TryLock() {
			cen.mu.Unlock() // RelocateAll's hold, let go for the heap to close
			t.Fatalf("class %d's lock is held after RelocateAll returned", c)
		}
		cen.mu.Unlock()
	}
	if moved[0] != moved[1] || moved[1] < len(bs[1])/2 {
		t.Fatalf("RelocateAll moved %d, Relocate %d, of %d", moved[1], moved[0], len(bs[1]))
	}
	for i := range bs[1] {
		a, b := bs[0][i], bs[1][i]
		if len(a) != len(b) || cap(a) != cap(b) || (cap(a) != 0) != (cap(b) != 0) {
			t.Fatalf("slice %d: len %d cap %d after RelocateAll, %d %d after Relocate", i, len(b), cap(b), len(a), cap(a))
		}
		if cap(b) == 0 {
			if (b == nil) != (orig[i] == nil) {
				t.Fatalf("slice %d: %v became %v", i, orig[i], b)
			}
			continue
		}
		if cap(b) <= maxSmall {
			sa, ia := blockAt(single, a)
			sb, ib := blockAt(batch, b)
			if sa != sb || ia != ib {
				t.Fatalf("slice %d: RelocateAll put it in span %d at block %d, Relocate in span %d at block %d", i, sb, ib, sa, ia)
			}
		}
		if k := idx[1][i]; k >= 0 && !hasMark(b, k) {
			t.Fatalf("block %d lost its bytes", k)
		}
	}
	for k, h := range heaps {
		want[k].allocs += uint64(moved[k])
		want[k].frees += uint64(moved[k])
		s := h.Stats()
		if err := checkCensus(s, want[k]); err != nil {
			t.Fatal(err)
		}
		if s.Relocations != uint64(moved[k]) {
			t.Errorf("Relocations %d, moved %d", s.Relocations, moved[k])
		}
		checkSummary(t, h, "after the pass")
	}
	if s, b := single.Stats(), batch.Stats(); s.MappedBytes != b.MappedBytes || s.SpanFreeBytes != b.SpanFreeBytes {
		t.Errorf("Relocate left %d mapped, %d span free; RelocateAll %d, %d", s.MappedBytes, s.SpanFreeBytes, b.MappedBytes, b.SpanFreeBytes)
	}
}

// blockAt is small block b's span id and index in the span: where it is,
// in terms that two heaps built alike share even where their regions'
// addresses differ (race builds grow a heap by regions of Go memory).
func blockAt(h *Heap, b []byte) (span uint32, i uint64) {
	page, _ := h.pages.PageOf(addrOf(b))
	e := *h.pages.Entry(page)
	i, _ = blockIn(addrOf(b), e, &classInfos[uint8(e)])
	return uint32(e >> 32), i
}

// TestRelocateAllRefuses: a slice Relocate refuses, met midway through a
// batch, makes RelocateAll panic with Relocate's message, after the slices
// before it were offered and before any after it is, with no lock held, a
// census that holds and a heap that Closes. The refused slice follows a
// block of its own class, so that the class's lock was held just before
// it. Positive control: without the holder's release before a slice goes
// to Relocate, the freed block's case deadlocks (the watchdog fails it).
func TestRelocateAllRefuses(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			a := h.NewArena()
			sh := h.NewShared(100)
			b := h.Alloc(100)
			cases := []struct {
				what, want string
				b          []byte
				class      int // the size whose class goes before it
			}{
				{"Go memory", "did not allocate", make([]byte, 100), 100},
				{"an interior slice", "not the start of a block", b[16:], 100},
				{"an arena's memory", "Arena", a.Alloc(100), 100},
				{"a Shared's bytes", "Shared", sh.Bytes(), cap(sh.Bytes())},
				{"a freed block", "free", nil, 100},
			}
			for _, c := range cases {
				freed := c.b == nil
				if freed { // taken now, to be in one of the sparse spans below
					c.b = h.Alloc(100)
				}
				// Spans a quarter full in the class before it, and in
				// another, so that RelocateAll looks at their blocks and
				// takes the class's lock.
				mine, other := movableClass(h, c.class), movableClass(h, 3000)
				if freed {
					h.Free(c.b)
				}
				if !h.checked() {
					h.Trim() // freed back in its span, with its key
				} // (a checker's Trim lets its quarantine go, and the next Alloc reuse freed)
				batch := [][]byte{other[0], mine[0], c.b, mine[1], other[1]}
				orig := slices.Clone(batch)
				s0 := h.Stats()
				msg := panicWithin(t, c.what, func() { h.RelocateAll(batch) })
				if !strings.HasPrefix(msg, "offheap: ") || !strings.Contains(msg, c.want) {
					t.Errorf("%s: panicked with %q, want it to say %q", c.what, msg, c.want)
				}
				moved := 0
				for i, x := range batch {
					if addrOf(x) == addrOf(orig[i]) {
						continue
					}
					if i >= 2 {
						t.Errorf("%s: slice %d, at or after the refused one, moved", c.what, i)
					}
					moved++
				}
				for _, n := range []int{c.class, 3000} {
					if cen := &h.central[sizeClass(n)]; !cen.mu.TryLock() {
						t.Fatalf("%s: the lock of %d bytes' class is held after the panic", c.what, n)
					} else {
						cen.mu.Unlock()
					}
				}
				// (A move between a guarded sample and a small block
				// changes InUseBytes: checked only without a checker.)
				if s := h.Stats(); s.LiveBlocks != s0.LiveBlocks || h.chk == nil && s.InUseBytes != s0.InUseBytes ||
					s.Relocations != s0.Relocations+uint64(moved) {
					t.Errorf("%s: %d live, %d in use, %d relocations after the panic; before %d, %d, %d, and %d moved",
						c.what, s.LiveBlocks, s.InUseBytes, s.Relocations, s0.LiveBlocks, s0.InUseBytes, s0.Relocations, moved)
				}
				mine[0], other[0] = batch[1], batch[0]
				freeAll(h, mine)
				freeAll(h, other)
			}
			closed := make(chan struct{})
			go func() {
				a.Release()
				sh.Release()
				h.Free(b)
				h.Close()
				close(closed)
			}()
			waitClosed(t, "Close did not return: a RelocateAll that panicked is still counted as running", closed)
		})
	}
}

// TestRelocateAllPastBlock: a slice longer than its block, in a span
// RelocateAll would move it out of, is refused with Relocate's message
// before a byte is copied. Positive control: without RelocateAll's length
// check, the slice moves.
func TestRelocateAllPastBlock(t *testing.T) {
	if buildChecked {
		t.Skip("checked build: the checker cannot see past a slice's capacity")
	}
	h := newTestHeap(t, unprofiled(Options{MagazineDepth: -1}))
	keep := movableClass(h, 100)      // spans carved in order, each a quarter full
	keep = append(keep, h.Alloc(100)) // a fuller span for the rest to move to
	bad := pastLen(keep[1], int(classSize[sizeClass(100)])-len(keep[1])+1)
	batch := [][]byte{keep[0], bad, keep[2]}
	msg := panicWithin(t, "past the block", func() { h.RelocateAll(batch) })
	if !strings.Contains(msg, "past the end of its") {
		t.Fatalf("RelocateAll of a slice past its block: %q", msg)
	}
	if addrOf(batch[1]) != addrOf(keep[1]) || addrOf(batch[2]) != addrOf(keep[2]) {
		t.Fatal("a slice at or after the refused one moved")
	}
	keep[0] = batch[0]
	freeAll(h, keep)
}

// panicWithin runs f, which must panic, and returns the panic's message
// (an error's text); a deadlock in f fails the test near the binary's
// deadline, naming what (waitFor).
func panicWithin(t *testing.T, what string, f func()) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		defer func() {
			r := recover()
			msg, _ := r.(string)
			if err, ok := r.(error); ok {
				msg = err.Error()
			}
			if r == nil {
				msg = "(no panic)"
			}
			done <- msg
		}()
		f()
	}()
	var msg string
	waitFor(t, func() string { return what + ": no return: deadlocked" }, func() bool {
		select {
		case msg = <-done:
			return true
		default:
			return false
		}
	})
	return msg
}

// TestRelocateAllClosed: RelocateAll on a closed heap panics with an error
// that wraps ErrClosed, unless it has nothing to look at.
func TestRelocateAllClosed(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{}))
	b := h.Alloc(100)
	h.Close()
	if n := h.RelocateAll(nil); n != 0 {
		t.Fatalf("RelocateAll(nil) moved %d", n)
	}
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "RelocateAll") {
			t.Fatalf("RelocateAll on a closed heap: %v", err)
		}
	}()
	h.RelocateAll([][]byte{b})
}

// TestRelocateAllChecked: in checked mode every small block of a batch
// moves through the checker, and a stale use of one is a use after free
// whose free stack has RelocateAll in it.
func TestRelocateAllChecked(t *testing.T) {
	h := checkedHeap(t, unprofiled(Options{}))
	bs := make([][]byte, 3)
	refs := make([]Ref, 3)
	for i := range bs {
		bs[i] = h.Alloc(100 * (i + 1))
		fillMark(bs[i], i)
		refs[i] = h.Ref(bs[i])
	}
	if n := h.RelocateAll(bs); n != len(bs) {
		t.Fatalf("%d of %d moved", n, len(bs))
	}
	for i, b := range bs {
		if !hasMark(b, i) {
			t.Fatalf("block %d lost its bytes", i)
		}
	}
	me := memoryError(t, func() { h.Bytes(refs[1]) })
	if me.Kind != UseAfterFree {
		t.Fatalf("Bytes of a moved block's old Ref: %v", me)
	}
	wantStack(t, "free", me.FreeStack, "RelocateAll")
	freeAll(h, bs)
	closeClean(t, h)
}

// TestRelocateHolder: RelocateAll's hold of a class lock lasts for
// relocateHold slices, and taking another class's lock lets the first go.
// Positive control: with spend releasing one slice late, the first check
// fails.
func TestRelocateHolder(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{}))
	x, y := &h.central[1], &h.central[2]
	held := func(c *central) bool {
		if c.mu.TryLock() {
			c.mu.Unlock()
			return false
		}
		return true
	}
	var hold relocateHolder
	t.Cleanup(hold.release) // before the heap's Close, which takes the locks
	hold.acquire(x)
	for i := range relocateHold {
		if !held(x) {
			t.Fatalf("the lock went after %d slices, want %d", i, relocateHold)
		}
		hold.spend()
	}
	if held(x) {
		t.Fatalf("the lock is still held after %d slices", relocateHold)
	}
	hold.acquire(x)
	hold.acquire(y)
	if held(x) || !held(y) {
		t.Fatalf("after taking another class's lock: first held %v, second held %v", held(x), held(y))
	}
	hold.release()
	hold.spend() // nothing held: nothing to count
	if held(y) || hold.cen != nil {
		t.Fatal("release left the lock held")
	}
}
