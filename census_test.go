package offheap

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// inUseOpts are the heaps InUse must agree with Stats on: magazines on and
// off, and each kind of checker (whose quarantines InUse leaves out).
var inUseOpts = []struct {
	name string
	opts Options
}{
	{"fast", Options{ProfileBytes: -1}},
	{"nomag", Options{MagazineDepth: -1, ProfileBytes: -1}},
	{"profiled", Options{}},
	{"checked", Options{Checked: true}},
	{"sampled", Options{GuardOneIn: 5}},
	{"guarded", Options{Checked: true, GuardPages: true}},
}

// checkInUse compares InUse with Stats, and, when want is not nil, with
// the bytes and blocks the test knows it holds.
func checkInUse(t *testing.T, h *Heap, when string, want *[2]uint64) {
	t.Helper()
	bytes, blocks := h.InUse()
	s := h.Stats()
	if bytes != s.InUseBytes || blocks != s.Allocs-s.Frees {
		t.Errorf("%s: InUse() = %d bytes, %d blocks; Stats says %d bytes, %d blocks (Allocs %d - Frees %d)",
			when, bytes, blocks, s.InUseBytes, s.Allocs-s.Frees, s.Allocs, s.Frees)
	}
	if want != nil && (bytes != want[0] || blocks != want[1]) {
		t.Errorf("%s: InUse() = %d bytes, %d blocks; the test holds %d bytes in %d blocks",
			when, bytes, blocks, want[0], want[1])
	}
}

// TestInUse allocates blocks of every class and large ones on several
// goroutines, frees some of them on other goroutines, and checks InUse
// against Stats and, in a fast heap, against the blocks it holds, at quiet
// points: after the allocations, after the frees, after Trim (which moves
// the magazines' blocks and leaves their census), and after Close.
func TestInUse(t *testing.T) {
	for _, tc := range inUseOpts {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHeap(t, tc.opts)
			exact := !h.opts.Checked && h.opts.GuardOneIn == 0 && h.opts.ProfileBytes < 0 // a checked block is larger than its class, a sampled one a page
			var model *[2]uint64
			if exact {
				model = new([2]uint64)
			}
			checkInUse(t, h, "new heap", model)

			sizes := append(testSizes(), 100<<10, 1<<20)
			const workers = 4
			held := make([][][]byte, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 17))
					for range 300 {
						held[w] = append(held[w], h.Alloc(sizes[rng.IntN(len(sizes))]))
					}
				})
			}
			wg.Wait()
			total := func() {
				if !exact {
					return
				}
				*model = [2]uint64{}
				for _, bs := range held {
					for _, b := range bs {
						model[0] += blockBytes(len(b))
						model[1]++
					}
				}
			}
			total()
			checkInUse(t, h, "after the allocations", model)

			// Each worker frees the other half of its neighbour's blocks.
			for w := range workers {
				wg.Go(func() {
					bs := held[(w+1)%workers]
					for i := 0; i < len(bs); i += 2 {
						h.Free(bs[i])
					}
				})
			}
			wg.Wait()
			for w, bs := range held {
				var kept [][]byte
				for i := 1; i < len(bs); i += 2 {
					kept = append(kept, bs[i])
				}
				held[w] = kept
			}
			total()
			checkInUse(t, h, "after freeing half", model)

			h.Trim()
			checkInUse(t, h, "after Trim", model)
			for _, bs := range held {
				for _, b := range bs[:len(bs)/2] {
					h.Free(b)
				}
			}
			held[0] = append(held[0], h.Alloc(64)) // a P's magazine that Trim emptied, refilled
			for w, bs := range held {
				held[w] = bs[len(bs)/2:]
			}
			total()
			checkInUse(t, h, "after more frees and an Alloc", model)

			err := h.Close()
			if h.opts.Checked && err == nil {
				t.Error("Close of a checked heap with live blocks reported no leak")
			}
			checkInUse(t, h, "after Close", model)
		})
	}
}

// TestInUseAllocatesNothing is the contract that lets a program call InUse
// on every request.
func TestInUseAllocatesNothing(t *testing.T) {
	for _, tc := range inUseOpts {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHeap(t, tc.opts)
			b := h.Alloc(100)
			defer h.Free(b)
			var bytes uint64
			if n := testing.AllocsPerRun(100, func() { bytes, _ = h.InUse() }); n != 0 {
				t.Errorf("InUse allocates %v times a call, want 0", n)
			}
			if bytes == 0 {
				t.Error("InUse saw no bytes in use with a live block")
			}
		})
	}
}

// TestInUseConcurrent reads InUse while workers allocate and free, handing
// blocks to each other: the figures never exceed what the workers can hold
// (a sum that went negative would wrap to a huge one), and are exact once
// the workers stop.
func TestInUseConcurrent(t *testing.T) {
	h := newTestHeap(t, Options{ProfileBytes: -1}) // the bound is in class sizes: a sample counts a page
	const (
		workers = 4
		keep    = 16 // blocks a worker holds at most
		size    = 512
		rounds  = 3000
	)
	handoff := make(chan []byte, workers*keep)
	bound := uint64(workers*keep+cap(handoff)) * size
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var reads int
	// The workers start once the reader has read: a reader scheduled only
	// after they finished would read nothing concurrent.
	reading := make(chan struct{})
	wg.Go(func() {
		defer func() {
			if reads == 0 {
				close(reading) // the first read failed: the workers need not wait
			}
		}()
		for {
			bytes, blocks := h.InUse()
			if bytes > bound || blocks > bound/size {
				t.Errorf("InUse() = %d bytes, %d blocks while the workers hold at most %d bytes", bytes, blocks, bound)
				return
			}
			if reads++; reads == 1 {
				close(reading)
			}
			select {
			case <-stop:
				return
			default:
			}
			runtime.Gosched()
		}
	})
	<-reading
	var work sync.WaitGroup
	for w := range workers {
		work.Go(func() {
			var mine [][]byte
			for i := range rounds {
				mine = append(mine, h.Alloc(size-i%8))
				if len(mine) == keep {
					for _, b := range mine[:keep/2] {
						select {
						case handoff <- b: // freed by another worker
						default:
							h.Free(b)
						}
					}
					mine = append(mine[:0], mine[keep/2:]...)
				}
				select {
				case b := <-handoff:
					h.Free(b)
				default:
				}
			}
			for _, b := range mine {
				h.Free(b)
			}
			_ = w
		})
	}
	work.Wait()
	close(stop)
	wg.Wait()
	close(handoff)
	for b := range handoff {
		h.Free(b)
	}
	if reads == 0 {
		t.Error("the reader never read")
	}
	checkInUse(t, h, "after the workers", &[2]uint64{0, 0})
}

// TestInUseClamps plays the skew a concurrent InUse can see, a Free counted
// on one P whose Alloc on another P it read before that Alloc, by adding
// Frees to a magazine's census by hand: InUse reads no live block, not a
// count wrapped below zero.
func TestInUseClamps(t *testing.T) {
	// No profile: a sampled block bypasses the magazines, and the heap would
	// have none to skew.
	h := newTestHeap(t, Options{ProfileBytes: -1})
	h.Free(h.Alloc(64))
	h.mags.mu.Lock()
	all := h.mags.all
	h.mags.mu.Unlock()
	if len(all) == 0 {
		t.Fatal("no magazine after an Alloc and a Free of 64 bytes")
	}
	m := all[0]
	mc := &m.cls[sizeClass(64)]
	mc.frees += 3
	bytes, blocks := h.InUse()
	mc.frees -= 3
	if bytes != 0 || blocks != 0 {
		t.Errorf("InUse() = %d bytes, %d blocks with more Frees than Allocs counted, want 0, 0", bytes, blocks)
	}
}

// BenchmarkInUse compares InUse with Stats on a heap whose every P has a
// magazine.
func BenchmarkInUse(b *testing.B) {
	h := newTestHeap(b, Options{})
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() { h.Free(h.Alloc(64)) })
	}
	wg.Wait()
	b.Run("arm=InUse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.InUse()
		}
	})
	b.Run("arm=Stats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.Stats()
		}
	})
}

// TestStatsAfterClose: a closed heap holds no memory, so every figure of
// free memory in its Stats is 0 (the counts of allocations stay).
func TestStatsAfterClose(t *testing.T) {
	h := newTestHeap(t, Options{})
	var blocks [][]byte
	for i := range 20000 {
		blocks = append(blocks, h.Alloc(16+i%300))
	}
	c := h.NewLocal()
	c.Free(c.Alloc(64))
	for _, b := range blocks {
		h.Free(b)
	}
	if s := h.Stats(); s.DepotBytes == 0 {
		t.Fatal("setup: nothing in the depots")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	s := h.Stats()
	if s.MappedBytes != 0 || s.ReleasedBytes != 0 || s.MagazineBytes != 0 || s.DepotBytes != 0 || s.LocalBytes != 0 {
		t.Fatalf("after Close: MappedBytes %d, ReleasedBytes %d, MagazineBytes %d, DepotBytes %d, LocalBytes %d; want all 0",
			s.MappedBytes, s.ReleasedBytes, s.MagazineBytes, s.DepotBytes, s.LocalBytes)
	}
	if s.Allocs == 0 || s.Allocs != s.Frees {
		t.Fatalf("after Close: %d Allocs, %d Frees", s.Allocs, s.Frees)
	}
}

// TestStatsLargeCountsGuarded: a guarded sample is a page run of its own,
// counted in Stats.Large, as its doc says.
func TestStatsLargeCountsGuarded(t *testing.T) {
	h := newTestHeap(t, Options{GuardOneIn: 1, ProfileBytes: -1})
	before := h.Stats().Large
	b := h.Alloc(64)
	if got := h.Stats().Large - before; got != 1 {
		t.Fatalf("a guarded 64-byte sample added %d to Stats.Large, want 1", got)
	}
	h.Free(b)
}
