package offheap

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
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
// keeps its bytes; a Local's block moves and the new one goes back through
// the Local; a Shared's bytes are refused while it is retained.
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

	c := h.NewLocal()
	defer c.Close()
	cb := c.Alloc(64)
	fillMark(cb, 5)
	nb, _ := h.Relocate(cb)
	if !hasMark(nb, 5) {
		t.Error("a Local's block lost its bytes")
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
	page, _ := h.pages.PageOf(addrOf(b))
	return uint32(*h.pages.Entry(page) >> 32)
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
