package offheap

import (
	"math"
	"runtime"
	"testing"
)

// TestFreeOnlyGoroutineBounded: one goroutine allocates, another only frees.
// The freeing side's magazine must hand blocks on, not hoard them: mapped
// memory stays bounded however long the run.
func TestFreeOnlyGoroutineBounded(t *testing.T) {
	h := newTestHeap(t, Options{})
	ch := make(chan []byte, 64)
	done := make(chan struct{})
	go func() {
		for b := range ch {
			h.Free(b)
		}
		close(done)
	}()
	rounds := 200_000
	if testing.Short() {
		rounds = 50_000
	}
	var peak uint64
	for i := range rounds {
		ch <- h.Alloc(64 + i%512)
		if i%10_000 == 0 {
			peak = max(peak, h.Stats().MappedBytes)
		}
	}
	close(ch)
	<-done
	bound := uint64(runtime.GOMAXPROCS(0)*MagazineBound(0)+(numClasses-1)*depotBytes) + 8<<20
	if peak > bound {
		t.Fatalf("producer/consumer mapped %d bytes, bound %d", peak, bound)
	}
	if s := h.Stats(); s.InUseBytes != 0 {
		t.Fatalf("InUseBytes %d", s.InUseBytes)
	}
}

func TestGOMAXPROCSChange(t *testing.T) {
	h := newTestHeap(t, unprofiled(Options{}))
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	var want census
	for _, p := range []int{1, 8, 3, 1, old} {
		runtime.GOMAXPROCS(p)
		done := make(chan [][]byte)
		for range p {
			go func() {
				var kept [][]byte
				for i := range 2000 {
					b := h.Alloc(8 + i%300)
					if i%2 == 0 {
						h.Free(b)
					} else {
						kept = append(kept, b)
					}
				}
				done <- kept
			}()
		}
		for range p {
			for _, b := range <-done {
				h.Free(b)
			}
		}
		want.allocs += uint64(2000 * p)
		want.frees += uint64(2000 * p)
	}
	if err := checkCensus(h.Stats(), want); err != nil {
		t.Fatal(err)
	}
}

func TestMagazineBound(t *testing.T) {
	if MagazineBound(-1) != 0 {
		t.Fatal("magazines off must hold nothing")
	}
	if a, b := MagazineBound(1), MagazineBound(DefaultMagazineDepth); a >= b {
		t.Fatalf("bound at depth 1 (%d) not below default (%d)", a, b)
	}
	if buildChecked {
		t.Skip("checked mode has no magazines")
	}
	// Fill one P's magazines to the brim: every class allocated past its
	// capacity, then freed on one goroutine with the P held (LockOSThread
	// does not pin the P, so measure MagazineBytes, which is per heap).
	h := newTestHeap(t, Options{})
	for c := 1; c < numClasses; c++ {
		var live [][]byte
		for range 2 * maxDepth {
			live = append(live, h.Alloc(int(classSize[c])))
		}
		for _, b := range live {
			h.Free(b)
		}
	}
	s := h.Stats()
	if s.MagazineBytes == 0 || s.MagazineBytes > uint64(runtime.GOMAXPROCS(0)*MagazineBound(0)) {
		t.Fatalf("MagazineBytes %d, bound %d per P", s.MagazineBytes, MagazineBound(0))
	}
}

// TestBigClassesCached: blocks up to 256 KiB are size-class blocks, cached
// per P as smaller ones are: Alloc+Free pairs of them come back from the
// magazine, not from the page heap.
func TestBigClassesCached(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode has no magazines on the fast path")
	}
	h := newTestHeap(t, unprofiled(Options{}))
	for _, n := range []int{16 << 10, 64 << 10, 256 << 10} {
		h.Free(h.Alloc(n))
		before := h.Stats()
		for range 100 {
			h.Free(h.Alloc(n))
		}
		s := h.Stats()
		// A goroutine that moves to another P between a Free and the next
		// Alloc misses once: most pairs hit.
		if hits := s.MagazineHits - before.MagazineHits; s.Large != before.Large || hits < 90 {
			t.Fatalf("%d-byte pairs: %d of 100 from a magazine, %d large", n, hits, s.Large-before.Large)
		}
	}
}

// TestAllocFromMagazine: Alloc and AllocUnzeroed pop from the P's magazine
// (popZeroed, popUnzeroed): on one P, each pops the block the other's Free
// pushed, of every class, counts a magazine hit, leaves the double-free key
// cleared, and declines when the magazine is to sample.
func TestAllocFromMagazine(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap's fast paths decline every allocation (TestCheckedMagazinesDecline)")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: every pop and push on its magazine
	h := newTestHeap(t, unprofiled(Options{}))
	allocs := []struct {
		name  string
		alloc func(int) []byte
	}{{"Alloc", h.Alloc}, {"AllocUnzeroed", h.AllocUnzeroed}}
	for c := 1; c < numClasses; c++ {
		for _, n := range []int{int(classSize[c-1]) + 1, int(classSize[c])} {
			prev := h.Alloc(n)
			for i := range 4 {
				x := allocs[i%2]
				h.Free(prev)
				hits := h.Stats().MagazineHits
				b := x.alloc(n)
				if addrOf(b) != addrOf(prev) || h.Stats().MagazineHits != hits+1 {
					t.Fatalf("%s(%d) after Free of %#x: %#x, %d magazine hits, want the freed block and 1",
						x.name, n, addrOf(prev), addrOf(b), h.Stats().MagazineHits-hits)
				}
				if n > 8 && (*[2]uint64)(ptr(addrOf(b)))[1] == h.key {
					t.Fatalf("%s(%d): the double-free key is left in the block", x.name, n)
				}
				prev = b
			}
			// A magazine about to sample: both decline to the slow path.
			h.Free(prev)
			for _, x := range allocs {
				for _, m := range h.mags.all {
					m.cls[sizeClass(n)].sampleAt = m.cls[sizeClass(n)].hits
				}
				hits := h.Stats().MagazineHits
				b := x.alloc(n)
				if h.Stats().MagazineHits != hits {
					t.Fatalf("%s(%d) took a block from a magazine about to sample", x.name, n)
				}
				h.Free(b)
			}
			for _, m := range h.mags.all {
				m.cls[sizeClass(n)].sampleAt = math.MaxUint64
			}
		}
	}
}
