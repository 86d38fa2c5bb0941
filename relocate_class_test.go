package offheap

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSpanFreeBytes: each class's SpanFreeBytes is what its spans hold
// free (on their free lists, or not yet carved), counted span by span over
// the partial list (an exhausted span holds none), after allocations,
// frees, Relocates and a Trim. Positive control: with putLocked's count
// left out, the classes disagree.
func TestSpanFreeBytes(t *testing.T) {
	if buildChecked {
		t.Skip("checked build: blocks come from the checker")
	}
	h := newTestHeap(t, unprofiled(Options{}))
	rng := rand.New(rand.NewPCG(7, 8))
	keep, _ := fragment(t, h, 50_000, rng)
	check := func(when string) {
		t.Helper()
		s := h.Stats()
		for c := 1; c < numClasses; c++ {
			cen := &h.central[c]
			cen.mu.Lock()
			var free uint64
			for id := cen.partial; id != 0; id = spanAt(&h.pages, id).next {
				sp := spanAt(&h.pages, id)
				free += uint64(classBlocks[c] - (sp.carved - sp.nfree))
			}
			cen.mu.Unlock()
			if got, want := s.Classes[c-1].SpanFreeBytes, free*uint64(classSize[c]); got != want {
				t.Fatalf("%s: class %d (%d B): SpanFreeBytes %d, its spans hold %d free", when, c, classSize[c], got, want)
			}
		}
	}
	check("after the eviction")
	for i, b := range keep {
		keep[i], _ = h.Relocate(b)
	}
	check("after a Relocate pass")
	for _, b := range keep {
		h.Free(b)
	}
	check("after every Free")
	h.Trim()
	check("after Trim")
	if s := h.Stats(); s.SpanFreeBytes != 0 {
		t.Errorf("SpanFreeBytes %d with nothing live after Trim", s.SpanFreeBytes)
	}
}

// checkSummary recounts Relocate's summary of every class over its partial
// list (a span off the list is full: neither sparse nor held) and fails
// where the kept counts or movable differ.
func checkSummary(t *testing.T, h *Heap, when string) {
	t.Helper()
	for c := 1; c < numClasses; c++ {
		cen := &h.central[c]
		cen.mu.Lock()
		var sparse, held uint32
		for id := cen.partial; id != 0; id = spanAt(&h.pages, id).next {
			sp := spanAt(&h.pages, id)
			if live := sp.carved - sp.nfree; live > 0 {
				held++
				if sparseSpan(live, classBlocks[c]) {
					sparse++
				}
			}
		}
		gs, gh, gm := cen.nsparse, cen.nheld, cen.movable.Load()
		stuck := gm || cen.stuck(h)
		cen.mu.Unlock()
		if gs != sparse || gh != held || gm && (sparse == 0 || held < 2) || !stuck {
			t.Fatalf("%s: class %d (%d B): summary sparse %d, held %d, movable %v; its spans: sparse %d, held %d, stuck %v",
				when, c, classSize[c], gs, gh, gm, sparse, held, stuck)
		}
	}
}

// stuck reports whether relocate would refuse every block of the class:
// no sparse span with a live block has a target other than itself with
// more live blocks. Called with mu held.
func (c *central) stuck(h *Heap) bool {
	t := (*span)(nil)
	if id := c.reloc; id != 0 && spanAt(&h.pages, id).listed && spanAt(&h.pages, id).class == c.class {
		t = spanAt(&h.pages, id)
	} else {
		for id := c.partial; id != 0; id = spanAt(&h.pages, id).next {
			if s := spanAt(&h.pages, id); t == nil || s.carved-s.nfree > t.carved-t.nfree {
				t = s
			}
		}
	}
	for id := c.partial; id != 0; id = spanAt(&h.pages, id).next {
		s := spanAt(&h.pages, id)
		if live := s.carved - s.nfree; live > 0 && sparseSpan(live, classBlocks[c.class]) && t != s && t.carved-t.nfree > live {
			return false
		}
	}
	return true
}

// TestRelocateSummary: Relocate's summary of each class (recount)
// matches a recount of its spans after random churn (Allocs and Frees of
// many classes, through magazines, a Local and with magazines off,
// Relocates, Trims), and a heap whose summary says nothing moves moves
// nothing. Positive control: with put's recount left out of putLocked,
// the counts drift at the first check.
func TestRelocateSummary(t *testing.T) {
	if buildChecked {
		t.Skip("checked build: blocks come from the checker")
	}
	for _, opts := range []Options{{}, {MagazineDepth: -1}} {
		h := newTestHeap(t, unprofiled(opts))
		rng := rand.New(rand.NewPCG(11, 12))
		ca := h.NewLocal()
		var live [][]byte
		var cached [][]byte
		for round := range 40 {
			for range 2000 {
				switch r := rng.IntN(10); {
				case r < 5:
					live = append(live, h.Alloc(16+rng.IntN(1<<(4+rng.IntN(7)))))
				case r < 6:
					cached = append(cached, ca.Alloc(16+rng.IntN(600)))
				case r < 9 && len(live) > 0:
					k := rng.IntN(len(live))
					h.Free(live[k])
					live[k] = live[len(live)-1]
					live = live[:len(live)-1]
				case len(cached) > 0:
					k := rng.IntN(len(cached))
					ca.Free(cached[k])
					cached[k] = cached[len(cached)-1]
					cached = cached[:len(cached)-1]
				}
			}
			if round%3 == 0 {
				h.Trim()
			}
			checkSummary(t, h, fmt.Sprintf("round %d, churn", round))
			for i := range live {
				if rng.IntN(2) == 0 {
					live[i], _ = h.Relocate(live[i])
				}
			}
			checkSummary(t, h, fmt.Sprintf("round %d, after Relocates", round))
		}
		// Two passes converge; then, wherever the summary says nothing
		// moves, a third moves nothing.
		h.Trim()
		for range 2 {
			for i := range live {
				live[i], _ = h.Relocate(live[i])
			}
		}
		checkSummary(t, h, "after two passes")
		for i, b := range live {
			m := h.central[sizeClass(cap(b))].movable.Load()
			if nb, moved := h.Relocate(b); moved && !m {
				t.Fatalf("block %d moved in a class whose summary said nothing moves", i)
			} else {
				live[i] = nb
			}
		}
		for _, b := range live {
			h.Free(b)
		}
		for _, b := range cached {
			ca.Free(b)
		}
		ca.Close()
		h.Trim()
		checkSummary(t, h, "after every Free")
	}
}

// TestRelocateCorruptTarget: a write after free into the free list of the
// span Relocate fills is found before the list is followed: Relocate
// panics with the corruption, no lock held, the block it was given stays
// where it was with its bytes, the list is abandoned (CorruptBytes), the
// census holds and later Relocates go on. Positive control: with take's
// failed check ignored in relocate, the corrupt head is handed out as the
// new block and nothing panics.
func TestRelocateCorruptTarget(t *testing.T) {
	if buildChecked {
		t.Skip("checked build: blocks come from the checker")
	}
	h := newTestHeap(t, unprofiled(Options{}))
	// The source: a span whose one block stays; the target: the class's
	// other spans, three quarters full, each with free blocks on its list.
	src := h.Alloc(200)
	fillMark(src, 9)
	home := spanOf(h, src)
	var all, fill, freed [][]byte
	for range 3 * classBlocks[sizeClass(200)] {
		all = append(all, h.Alloc(200))
	}
	for i, b := range all {
		if spanOf(h, b) == home || i%4 == 0 {
			h.Free(b)
			if spanOf(h, b) != home {
				freed = append(freed, b)
			}
		} else {
			fill = append(fill, b)
		}
	}
	h.Trim()
	// A write after free into every free block outside home: whichever
	// span is the target, its list's head is written over.
	for _, b := range freed {
		w := (*[2]uint64)(ptr(addrOf(b)))
		w[0], w[1] = 0x4141414141414141, 0x4242424242424242
	}
	s0 := h.Stats()
	msg := mustPanic(t, func() { h.Relocate(src) })
	if !strings.Contains(msg, "heap corruption") {
		t.Fatalf("Relocate over a corrupt target: %q", msg)
	}
	if !hasMark(src, 9) || spanOf(h, src) != home {
		t.Fatal("the block Relocate was given moved or lost its bytes")
	}
	s := h.Stats()
	if s.CorruptBytes == 0 || s.Relocations != 0 || s.Allocs != s0.Allocs || s.Frees != s0.Frees {
		t.Fatalf("after the corrupt target: %+v", s)
	}
	// The next targets are corrupt too, each abandoned in turn; then the
	// class has only sound spans (none, here), and Relocate returns src.
	for range 10 {
		func() {
			defer func() { recover() }()
			src, _ = h.Relocate(src)
		}()
	}
	if !hasMark(src, 9) {
		t.Fatal("src lost its bytes")
	}
	checkSummary(t, h, "after the abandoned lists")
	h.Free(src)
	for _, b := range fill {
		h.Free(b)
	}
	if s := h.Stats(); s.LiveBlocks != 0 {
		t.Errorf("%d blocks live at the end", s.LiveBlocks)
	}
}

// TestRelocateStaleTarget: the span Relocate fills is chosen as the class's
// fullest; when it has lost its blocks since, it is chosen again, so that a
// sparse span fuller than it still empties into the fullest one.
func TestRelocateStaleTarget(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{}))
	if h.chk != nil {
		t.Skip("checked mode moves every block, through Alloc and Free")
	}
	const n = 200
	per := int(classBlocks[sizeClass(n)])
	// Three spans whose blocks are all ours, left 90%, 40% and 30% full.
	bySpan, full := fullSpans(t, h, n, 3)
	a, b, c := full[0], full[1], full[2]
	keep := func(id uint32, k int) {
		freeAll(h, bySpan[id][k:])
		bySpan[id] = bySpan[id][:k]
	}
	keep(a, per*9/10)
	keep(b, per*4/10)
	keep(c, per*3/10)
	h.Trim()
	// The first move chooses a, the fullest, and fills it.
	nb, moved := h.Relocate(bySpan[c][0])
	if !moved || spanOf(h, nb) != a {
		t.Fatalf("first move: moved %v, into span %d, want span %d", moved, spanOf(h, nb), a)
	}
	bySpan[c][0] = nb
	// a loses all but one block: b is the fullest now.
	keep(a, 1)
	h.Trim()
	nb, moved = h.Relocate(bySpan[c][1])
	if !moved || spanOf(h, nb) != b {
		t.Fatalf("after the target emptied: moved %v, into span %d, want span %d (a target chosen when it was the fullest kept a sparser span's blocks in place)", moved, spanOf(h, nb), b)
	}
	bySpan[c][1] = nb
	for _, bs := range bySpan {
		freeAll(h, bs)
	}
	closeClean(t, h)
}

// TestRelocateTargetOrder: when the target fills, the next is the fullest
// span as it is then, not as the scan that ordered the candidates found it:
// a candidate that lost blocks since is placed again by what it holds
// (central.target).
func TestRelocateTargetOrder(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{MagazineDepth: -1})) // frees straight to the spans
	if h.chk != nil {
		t.Skip("checked mode moves every block, through Alloc and Free")
	}
	const n = 200
	per := int(classBlocks[sizeClass(n)])
	bySpan, full := fullSpans(t, h, n, 4)
	a, b, c, d := full[0], full[1], full[2], full[3]
	keep := func(id uint32, k int) {
		freeAll(h, bySpan[id][k:])
		bySpan[id] = bySpan[id][:k]
	}
	keep(a, per-1)
	keep(b, per*6/10)
	keep(c, per*4/10)
	keep(d, per*2/10)
	// The first move scans the partial list, and fills a, the fullest.
	nb, moved := h.Relocate(bySpan[d][0])
	if !moved || spanOf(h, nb) != a {
		t.Fatalf("first move: moved %v, into span %d, want span %d", moved, spanOf(h, nb), a)
	}
	bySpan[d][0] = nb
	// b, second at the scan, loses blocks (no Trim, which would empty the
	// candidates): c is the fullest now.
	for _, x := range bySpan[b][per*3/10:] {
		h.Free(x)
	}
	bySpan[b] = bySpan[b][:per*3/10]
	nb, moved = h.Relocate(bySpan[d][1])
	if !moved || spanOf(h, nb) != c {
		t.Fatalf("after a filled: moved %v, into span %d, want span %d (b, %d, emptier since the scan)", moved, spanOf(h, nb), c, b)
	}
	bySpan[d][1] = nb
	for _, bs := range bySpan {
		freeAll(h, bs)
	}
	closeClean(t, h)
}

// fullSpans allocates blocks of n bytes until it has k spans whose blocks
// are all its own, frees the rest, and returns those spans' blocks by span
// id and the ids.
func fullSpans(t *testing.T, h *Heap, n, k int) (map[uint32][][]byte, []uint32) {
	t.Helper()
	per := int(classBlocks[sizeClass(n)])
	bySpan := map[uint32][][]byte{}
	// A goroutine may change P while it allocates, leaving part of a span
	// in another P's magazine; allocate until k spans are wholly ours.
	whole := 0
	for i := 0; whole < k && i < (k+16)*per; i++ {
		b := h.Alloc(n)
		id := spanOf(h, b)
		bySpan[id] = append(bySpan[id], b)
		if len(bySpan[id]) == per {
			whole++
		}
	}
	var full []uint32
	for id, bs := range bySpan {
		if len(bs) == per && len(full) < k {
			full = append(full, id)
		} else {
			freeAll(h, bs)
			delete(bySpan, id)
		}
	}
	if len(full) < k {
		t.Fatalf("%d spans of %d blocks all handed out, want %d", len(full), per, k)
	}
	return bySpan, full
}
