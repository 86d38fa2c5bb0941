package offheap

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fillMark writes block i's pattern into b.
func fillMark(b []byte, i int) {
	for j := range b {
		b[j] = byte(i*7 + j)
	}
}

// hasMark reports whether b holds block i's pattern.
func hasMark(b []byte, i int) bool {
	for j := range b {
		if b[j] != byte(i*7+j) {
			return false
		}
	}
	return true
}

// fragment allocates n blocks of 16-512 bytes, patterned, frees all but one
// in ten at random and trims: what an eviction leaves. It returns the
// survivors by index, and the census so far.
func fragment(t *testing.T, h *Heap, n int, rng *rand.Rand) (map[int][]byte, census) {
	t.Helper()
	var want census
	keep := make(map[int][]byte)
	all := make([][]byte, n)
	for i := range all {
		all[i] = h.Alloc(16 + rng.IntN(497))
		fillMark(all[i], i)
		want.allocs++
	}
	for i, b := range all {
		if rng.IntN(10) == 0 {
			keep[i] = b
			want.inUse += blockBytes(len(b))
		} else {
			h.Free(b)
			want.frees++
		}
	}
	h.Trim()
	return keep, want
}

// TestRelocateFrag: after a random eviction, one Relocate of every survivor
// moves most of them, keeps every byte, holds the census identity after
// every call, and empties enough spans that the heap maps at most 1.3x its
// live bytes plus a span per class; the SpanFreeBytes that said so falls.
func TestRelocateFrag(t *testing.T) {
	if buildChecked {
		t.Skip("checked build: every Relocate moves (TestRelocateChecked)")
	}
	for _, arm := range []struct {
		name string
		opts Options
	}{{"fast", Options{}}, {"nomag", Options{MagazineDepth: -1}}} {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			rng := rand.New(rand.NewPCG(1, 2))
			keep, want := fragment(t, h, 100_000, rng)
			before := h.Stats()
			if err := checkCensus(before, want); err != nil {
				t.Fatal(err)
			}
			if before.SpanFreeBytes < 5*before.InUseBytes {
				t.Fatalf("after the eviction SpanFreeBytes %d, InUseBytes %d: want the spans sparse", before.SpanFreeBytes, before.InUseBytes)
			}
			moved := 0
			for i, b := range keep {
				nb, ok := h.Relocate(b)
				if ok {
					moved++
					want.allocs++
					want.frees++
					if addrOf(nb) == addrOf(b) {
						t.Fatalf("block %d moved to itself", i)
					}
				} else if addrOf(nb) != addrOf(b) {
					t.Fatalf("block %d: not moved, but a new slice", i)
				}
				if len(nb) != len(b) || cap(nb) != cap(b) || !hasMark(nb, i) {
					t.Fatalf("block %d: len %d cap %d after Relocate, want %d %d, pattern kept %v", i, len(nb), cap(nb), len(b), cap(b), hasMark(nb, i))
				}
				keep[i] = nb
				if err := checkCensus(h.Stats(), want); err != nil {
					t.Fatalf("after %d moves: %v", moved, err)
				}
			}
			h.Trim()
			after := h.Stats()
			if err := checkCensus(after, want); err != nil {
				t.Fatal(err)
			}
			if moved < len(keep)/2 || after.Relocations != uint64(moved) {
				t.Fatalf("%d of %d survivors moved, Relocations %d", moved, len(keep), after.Relocations)
			}
			var perClass uint64
			for _, c := range after.Classes {
				perClass += c.Relocations
			}
			if perClass != after.Relocations {
				t.Errorf("per-class Relocations sum %d, total %d", perClass, after.Relocations)
			}
			// Each class keeps at most one partial span being filled, one
			// it could not fill and one empty span: 3 spans of at most 64 KiB.
			slack := uint64(3*len(after.Classes)) << 16
			if limit := after.InUseBytes*13/10 + slack; after.MappedBytes > limit {
				t.Errorf("MappedBytes %d after the pass, InUseBytes %d: want at most %d", after.MappedBytes, after.InUseBytes, limit)
			}
			if after.SpanFreeBytes*4 > before.SpanFreeBytes {
				t.Errorf("SpanFreeBytes %d after the pass, %d before: want it down to a quarter", after.SpanFreeBytes, before.SpanFreeBytes)
			}
			t.Logf("moved %d of %d; mapped %d -> %d for %d live; span free %d -> %d",
				moved, len(keep), before.MappedBytes, after.MappedBytes, after.InUseBytes, before.SpanFreeBytes, after.SpanFreeBytes)
			// A second pass finds little to move.
			again := 0
			for i, b := range keep {
				nb, ok := h.Relocate(b)
				if ok {
					again++
				}
				keep[i] = nb
			}
			if again > moved/10 {
				t.Errorf("second pass moved %d, first %d", again, moved)
			}
			for i, b := range keep {
				if !hasMark(b, i) {
					t.Fatalf("block %d lost its bytes", i)
				}
				h.Free(b)
			}
		})
	}
}

// TestRelocateDense: in a heap whose spans are three quarters full, give or
// take, Relocate moves nothing and changes no count. Positive control: with
// every span taken for sparse, blocks move to the fullest and the test
// fails.
func TestRelocateDense(t *testing.T) {
	if buildChecked {
		t.Skip("checked build: every Relocate moves")
	}
	h := newTestHeap(t, unprofiled(Options{}))
	rng := rand.New(rand.NewPCG(3, 4))
	var all, bs [][]byte
	// Sixteen spans' worth, of which the kept quarter-freed spans must make
	// five: a goroutine that changes P midway leaves a span partly filled
	// in each P's magazine, and a span that was not filled whole goes.
	for range 16 * classBlocks[sizeClass(100)] {
		all = append(all, h.Alloc(100))
	}
	// The spans a magazine's refill started and the loop did not fill go
	// whole, for no span to be sparse.
	perSpan := make(map[uint32]int)
	for _, b := range all {
		perSpan[spanOf(h, b)]++
	}
	for _, b := range all {
		if perSpan[spanOf(h, b)] < int(classBlocks[sizeClass(100)]) || rng.IntN(4) == 0 {
			h.Free(b)
		} else {
			bs = append(bs, b)
		}
	}
	h.Trim()
	s0 := h.Stats()
	if len(bs) < 5*int(classBlocks[sizeClass(100)]) {
		t.Fatalf("%d blocks kept", len(bs))
	}
	for i, b := range bs {
		if nb, moved := h.Relocate(b); moved || addrOf(nb) != addrOf(b) {
			t.Fatalf("block %d of a span three quarters full moved", i)
		}
	}
	if s := h.Stats(); s.Allocs != s0.Allocs || s.Frees != s0.Frees || s.Relocations != 0 {
		t.Fatalf("counts moved: %v, then %v", s0, s)
	}
	// Where the class has nothing to move, Relocate still reads b's
	// pagemap word and refuses what Free refuses: an interior slice.
	if in := bs[0][16:]; h.central[sizeClass(cap(in))].movable.Load() {
		t.Fatalf("class %d, which holds no block, can move", sizeClass(cap(in)))
	} else if msg := mustPanic(t, func() { h.Relocate(in) }); !strings.Contains(msg, "not the start of a block") {
		t.Fatalf("Relocate of an interior slice of a class with nothing to move: %q", msg)
	}
	// Large blocks and the empty slice never move.
	big := h.Alloc(maxSmall + 1)
	if nb, moved := h.Relocate(big); moved || addrOf(nb) != addrOf(big) {
		t.Fatal("a large block moved")
	}
	if nb, moved := h.Relocate(nil); moved || nb != nil {
		t.Fatal("nil moved")
	}
}

// TestRelocateRefuses: Relocate panics as Free does for what Free refuses
// (Go memory, an interior address, Arena memory, a Shared's bytes, a freed
// block, a slice longer than its block) and leaves the heap as it was: a
// census that still holds, and the block still Free's.
func TestRelocateRefuses(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			a := h.NewArena()
			defer a.Release()
			sh := h.NewShared(100)
			defer sh.Release()
			b := h.Alloc(100)
			big := h.Alloc(maxSmall + 10)
			// Each case's class with something to move (spans a quarter
			// full): where nothing can, Relocate reads the pagemap and not
			// the block, and a freed block comes back as it is.
			for _, n := range []int{100, cap(b) - 16, cap(sh.Bytes())} {
				defer freeAll(h, movableClass(h, n))
			}
			freed := h.Alloc(100)
			h.Free(freed)
			h.Trim() // back in its span, which the refill left sparse again
			cases := map[string]struct {
				b    []byte
				want string
			}{
				"Go memory":         {make([]byte, 100), "did not allocate"},
				"an interior slice": {b[16:], "not the start of a block"},
				"an arena's memory": {a.Alloc(100), "Arena"},
				"a Shared's bytes":  {sh.Bytes(), "Shared"},
				"a freed block":     {freed, "free"},
				"inside a large":    {big[pageSize : pageSize+100 : pageSize+100], "not"},
			}
			s0 := h.Stats()
			for what, c := range cases {
				if arm.name == "checked" && what == "inside a large" {
					continue // checked mode does not move large blocks, nor look at them
				}
				msg := mustPanic(t, func() { h.Relocate(c.b) })
				if !strings.Contains(msg, c.want) {
					t.Errorf("%s: %q, want it to say %q", what, msg, c.want)
				}
			}
			// Checked mode allocates the new block first, and frees it
			// when Free refuses b, as Realloc does.
			if s := h.Stats(); s.LiveBlocks != s0.LiveBlocks || s.InUseBytes != s0.InUseBytes || s.Relocations != 0 ||
				h.chk == nil && (s.Allocs != s0.Allocs || s.Frees != s0.Frees) {
				t.Errorf("a refused Relocate counted: %v, then %v", s0, s)
			}
			h.Free(b)
			h.Free(big)
		})
	}
}

// movableClass leaves n bytes' class with spans a quarter full, for a
// Relocate of it to look at its block, and returns the blocks it keeps.
func movableClass(h *Heap, n int) (keep [][]byte) {
	var rest [][]byte
	for i := range 3 * classBlocks[sizeClass(n)] {
		if x := h.Alloc(n); i%4 == 0 {
			keep = append(keep, x)
		} else {
			rest = append(rest, x)
		}
	}
	freeAll(h, rest)
	return keep
}

// TestRelocateChecked: in checked mode every small block moves, and b is
// freed as Free frees it: a later use (here a Free) is a use after free
// whose free stack is Relocate's.
func TestRelocateChecked(t *testing.T) {
	h := checkedHeap(t, unprofiled(Options{}))
	b := h.Alloc(100)
	fillMark(b, 3)
	r := h.Ref(b)
	nb, moved := h.Relocate(b[:50])
	if !moved || len(nb) != 50 || cap(nb) != 100 || !hasMark(nb[:100], 3) {
		t.Fatalf("moved %v, len %d cap %d", moved, len(nb), cap(nb))
	}
	me := memoryError(t, func() { h.Bytes(r) })
	if me.Kind != UseAfterFree {
		t.Fatalf("Bytes of the old block's Ref: %v", me)
	}
	wantStack(t, "free", me.FreeStack, "Relocate")
	me = memoryError(t, func() { h.Free(b) })
	if me.Kind != DoubleFree {
		t.Fatalf("%v", me)
	}
	wantStack(t, "free", me.FreeStack, "Relocate")
	wantStack(t, "free", me.FreeStack, "TestRelocateChecked")
	if s := h.Stats(); s.Relocations != 1 {
		t.Errorf("Relocations %d, want 1", s.Relocations)
	}
	h.Free(nb)
	closeClean(t, h)
}

// TestRelocateHandles: a Buffer's block moves with Buffer.Relocate and
// keeps its bytes; a Cache's block moves and the new one goes back through
// the Cache; a Shared's bytes are refused while it is retained.
func TestRelocateHandles(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{}))
	buf := h.NewBuffer(200)
	buf.WriteString("kept across the move")
	// The Buffer's span left with its block alone, the class's other spans
	// three quarters full: the move has somewhere fuller to go.
	home := spanOf(h, buf.blk)
	var all, fill [][]byte
	for range 3 * classBlocks[sizeClass(200)] {
		all = append(all, h.Alloc(200))
	}
	for i, b := range all {
		if spanOf(h, b) == home || i%4 == 0 {
			h.Free(b)
		} else {
			fill = append(fill, b)
		}
	}
	h.Trim()
	if !buf.Relocate() {
		t.Error("the Buffer's block, alone in its span, did not move")
	}
	if got := buf.String(); got != "kept across the move" {
		t.Errorf("Buffer holds %q after Relocate", got)
	}
	buf.Free()
	if (&Buffer{h: h}).Relocate() {
		t.Error("an empty Buffer moved")
	}

	c := h.NewCache()
	defer c.Close()
	cb := c.Alloc(64)
	fillMark(cb, 5)
	nb, _ := h.Relocate(cb)
	if !hasMark(nb, 5) {
		t.Error("a Cache's block lost its bytes")
	}
	c.Free(nb)

	sh := h.NewShared(64)
	around := movableClass(h, cap(sh.Bytes()))
	msg := mustPanic(t, func() { h.Relocate(sh.Bytes()) })
	if !strings.Contains(msg, "Shared") {
		t.Errorf("Relocate of a Shared's bytes: %q", msg)
	}
	sh.Release()
	freeAll(h, around)
	for _, b := range fill {
		h.Free(b)
	}
	if s := h.Stats(); s.LiveBlocks != 0 {
		t.Errorf("%d blocks live at the end", s.LiveBlocks)
	}
}

// spanOf is the id of the span that holds small block b (0 in a checked
// heap, whose blocks the test cannot place).
func spanOf(h *Heap, b []byte) uint32 {
	if h.chk != nil {
		return 0
	}
	page, _ := h.pages.pageOf(addrOf(b))
	return uint32(*h.pages.entry(page) >> 32)
}

// TestRelocateConcurrent: goroutines relocate their own blocks, one by one
// and in batches, while others allocate and free the same classes; every
// block keeps its pattern, and the census holds once they stop. Run it with
// -race.
func TestRelocateConcurrent(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			workers := max(4, runtime.GOMAXPROCS(0))
			rounds := 3000
			if testing.Short() {
				rounds = 1000
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			var total census
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 9))
					var want census
					live := make(map[int][]byte)
					var keys []int
					var batch [][]byte
					for i := range rounds {
						switch r := rng.IntN(10); {
						case r < 5 || len(live) == 0:
							b := h.Alloc(16 + rng.IntN(300))
							fillMark(b, i)
							live[i] = b
							want.allocs++
						case r < 7:
							for k, b := range live {
								if !hasMark(b, k) {
									t.Errorf("block %d lost its pattern before its Free", k)
								}
								h.Free(b)
								delete(live, k)
								want.frees++
								break
							}
						case r < 9:
							for k, b := range live {
								nb, moved := h.Relocate(b)
								if !hasMark(nb, k) {
									t.Errorf("block %d lost its pattern in Relocate", k)
								}
								live[k] = nb
								if moved {
									want.allocs++
									want.frees++
								}
								break
							}
						default: // a batch of up to 8, through RelocateAll
							keys, batch = keys[:0], batch[:0]
							for k, b := range live {
								if keys, batch = append(keys, k), append(batch, b); len(keys) == 8 {
									break
								}
							}
							moved := h.RelocateAll(batch)
							for j, k := range keys {
								if !hasMark(batch[j], k) {
									t.Errorf("block %d lost its pattern in RelocateAll", k)
								}
								live[k] = batch[j]
							}
							want.allocs += uint64(moved)
							want.frees += uint64(moved)
						}
					}
					for k, b := range live {
						if !hasMark(b, k) {
							t.Errorf("block %d lost its pattern", k)
						}
						h.Free(b)
						want.frees++
					}
					mu.Lock()
					total.allocs += want.allocs
					total.frees += want.frees
					mu.Unlock()
				}()
			}
			wg.Wait()
			if err := checkCensusOf(h, h.Stats(), total); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkRelocateDense: Relocate of blocks whose spans are full, the cost
// of a pass over a heap with nothing to gain, per block (blocks=4096: all
// in cache; blocks=1M: the pass's lookups miss), in allocation order and in
// a random order, as a pass over a map or an index meets them. The blocks
// after the first n, which a magazine's refill may have carved from a span
// they leave sparse, are not relocated.
func BenchmarkRelocateDense(b *testing.B) {
	for _, n := range []int{4096, 1 << 20} {
		for _, order := range []string{"alloc", "random"} {
			b.Run(fmt.Sprintf("blocks=%d/order=%s", n, order), func(b *testing.B) {
				h := newTestHeap(b, unprofiled(Options{}))
				bs := make([][]byte, n+maxDepth)
				for i := range bs {
					bs[i] = h.Alloc(64)
				}
				bs = bs[:n]
				if order == "random" {
					rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })
				}
				b.ResetTimer()
				for i := range b.N {
					k := i % n
					bs[k], _ = h.Relocate(bs[k])
				}
			})
		}
	}
}

// BenchmarkRelocatePass: one Relocate pass over the survivors of a random
// eviction of nine values in ten (200k or 2M values of 16-512 B), per
// block moved, against moving the same survivors by hand (Alloc, copy,
// Free), per block, through the magazines and with them off (by-hand-nomag:
// Alloc and Free then take the central path to a span's free blocks, as
// Relocate does); with the default ReleaseDelay and with -1, where every
// span the pass empties goes back to the operating system at once. The two
// sizes show whether a pass's cost per block grows with the heap.
func BenchmarkRelocatePass(b *testing.B) {
	for _, values := range []int{200_000, 2_000_000} {
		for _, rd := range []time.Duration{0, -1} {
			for _, way := range []string{"relocate", "relocate-all", "by-hand", "by-hand-nomag"} {
				b.Run(fmt.Sprintf("values=%d/release=%v/way=%s", values, rd, way), func(b *testing.B) {
					benchRelocatePass(b, values, rd, way)
				})
			}
		}
	}
}

// benchRelocatePass is one row of BenchmarkRelocatePass.
func benchRelocatePass(b *testing.B, values int, rd time.Duration, way string) {
	var el time.Duration
	var blocks int
	for i := range b.N {
		opts := Options{ReleaseDelay: rd}
		if way == "by-hand-nomag" {
			opts.MagazineDepth = -1
		}
		h, err := NewHeap(unprofiled(opts))
		if err != nil {
			b.Fatal(err)
		}
		keep := evictNineInTen(h, values, uint64(i))
		b.StopTimer()
		t0 := time.Now()
		switch way {
		case "relocate":
			blocks += relocateEach(h, keep)
		case "relocate-all":
			blocks += relocateBatches(h, keep)
		default:
			blocks += moveByHand(h, keep)
		}
		el += time.Since(t0)
		b.StartTimer()
		h.Close()
	}
	b.ReportMetric(float64(el.Nanoseconds())/float64(max(blocks, 1)), "ns/block")
}

// evictNineInTen fills h with values of 16-512 B drawn from seed, frees
// nine in ten at random, trims, and returns the survivors in the order
// they were allocated, as newFloorHeap does for its heap
// (relocate_floor_test.go).
func evictNineInTen(h *Heap, values int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 5))
	all := make([][]byte, values)
	for i := range all {
		all[i] = h.Alloc(16 + rng.IntN(497))
		all[i][0] = byte(i)
	}
	var keep [][]byte
	for _, v := range all {
		if rng.IntN(10) == 0 {
			keep = append(keep, v)
		} else {
			h.Free(v)
		}
	}
	h.Trim()
	return keep
}

// relocateEach offers every block to Relocate, keeps what it returns, and
// says how many moved.
func relocateEach(h *Heap, keep [][]byte) (moved int) {
	for k, v := range keep {
		var ok bool
		if keep[k], ok = h.Relocate(v); ok {
			moved++
		}
	}
	return moved
}

// relocateBatches offers every block to RelocateAll, a thousand at a time,
// and says how many moved.
func relocateBatches(h *Heap, keep [][]byte) (moved int) {
	for part := range slices.Chunk(keep, 1000) {
		moved += h.RelocateAll(part)
	}
	return moved
}

// moveByHand moves every block with AllocUnzeroed, copy and Free.
func moveByHand(h *Heap, keep [][]byte) int {
	for k, v := range keep {
		nv := h.AllocUnzeroed(cap(v))
		copy(nv, v)
		h.Free(v)
		keep[k] = nv
	}
	return len(keep)
}

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
			for id := cen.partial; id != 0; id = h.pages.span(id).next {
				sp := h.pages.span(id)
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
		for id := cen.partial; id != 0; id = h.pages.span(id).next {
			sp := h.pages.span(id)
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
	if id := c.reloc; id != 0 && h.pages.span(id).listed && h.pages.span(id).class == c.class {
		t = h.pages.span(id)
	} else {
		for id := c.partial; id != 0; id = h.pages.span(id).next {
			if s := h.pages.span(id); t == nil || s.carved-s.nfree > t.carved-t.nfree {
				t = s
			}
		}
	}
	for id := c.partial; id != 0; id = h.pages.span(id).next {
		s := h.pages.span(id)
		if live := s.carved - s.nfree; live > 0 && sparseSpan(live, classBlocks[c.class]) && t != s && t.carved-t.nfree > live {
			return false
		}
	}
	return true
}

// TestRelocateSummary: Relocate's summary of each class (recount)
// matches a recount of its spans after random churn (Allocs and Frees of
// many classes, through magazines, a Cache and with magazines off,
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
		ca := h.NewCache()
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
	for range (k + 1) * per {
		b := h.Alloc(n)
		bySpan[spanOf(h, b)] = append(bySpan[spanOf(h, b)], b)
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
