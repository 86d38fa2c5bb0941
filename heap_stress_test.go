package offheap

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/offheap/offheap/internal/pin"
)

// fill writes b's pattern: every byte derived from the block's address and
// its offset, so a block handed out twice, or written by someone else, shows.
func fill(b []byte) {
	seed := byte(addrOf(b) >> 4)
	for i := range b {
		b[i] = seed + byte(i)*7
	}
}

// checkFill reports the first byte of b that does not hold its pattern.
func checkFill(b []byte) error {
	seed := byte(addrOf(b) >> 4)
	for i, x := range b {
		if want := seed + byte(i)*7; x != want {
			return fmt.Errorf("block %#x (%d bytes): byte %d is %#x, want %#x", addrOf(b), len(b), i, x, want)
		}
	}
	return nil
}

// TestCheckFillControl: a block overwritten by someone else must be caught.
func TestCheckFillControl(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.Alloc(100)
	fill(b)
	if err := checkFill(b); err != nil {
		t.Fatal(err)
	}
	b[57]++
	if checkFill(b) == nil {
		t.Fatal("checkFill missed a changed byte")
	}
	h.Free(b)
}

// stressSize draws sizes across every class, with some large blocks.
func stressSize(r *rand.Rand) int {
	switch r.IntN(20) {
	case 0:
		return maxSmall + 1 + r.IntN(200_000)
	case 1, 2, 3:
		return 1 + r.IntN(maxSmall)
	default:
		return 1 + r.IntN(512)
	}
}

// TestConcurrentStress runs GOMAXPROCS*4 goroutines allocating blocks of
// every size, filling each with its pattern and checking it before Free.
// Half of the blocks are freed by another goroutine than the one that
// allocated them, and another goroutine calls Trim over and over, taking
// every P's magazine while the others use them. A block handed to two
// owners at once fails the check. (The window Trim's wait closes, a few
// instructions inside a pinned section, is too short for this test to hit
// without it; TestQuiesceWaitsForPinned shows the wait itself.)
//
// The arm sampled also puts one allocation in 7 on guard pages, most of
// them on the pool's runs, and profiles at a tenth of a page.
func TestConcurrentStress(t *testing.T) {
	sampled := arms[0]
	sampled.name, sampled.opts = "sampled", Options{GuardOneIn: 7, ProfileBytes: 800}
	for _, arm := range append(arms[:len(arms):len(arms)], sampled) {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			workers := runtime.GOMAXPROCS(0) * 4
			ops := 4000
			if testing.Short() || raceEnabled {
				ops = 1000
			}
			handoff := make(chan []byte, 256)
			var wg, freers sync.WaitGroup
			errs := make(chan error, workers*2)
			for range workers / 2 { // goroutines that free other goroutines' blocks
				freers.Add(1)
				go func() {
					defer freers.Done()
					for b := range handoff {
						if err := checkFill(b); err != nil {
							errs <- err
						}
						h.Free(b)
					}
				}()
			}
			stopTrims := make(chan struct{})
			var trimmer sync.WaitGroup
			var trims int
			trimmer.Go(func() {
				for {
					select {
					case <-stopTrims:
						return
					default:
					}
					h.Trim()
					trims++
					runtime.Gosched()
				}
			})
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 1))
					var mine [][]byte
					for range ops {
						b := h.Alloc(stressSize(r))
						fill(b)
						switch {
						case r.IntN(2) == 0:
							handoff <- b
						default:
							mine = append(mine, b)
						}
						if len(mine) > 32 {
							k := r.IntN(len(mine))
							if err := checkFill(mine[k]); err != nil {
								errs <- err
								return
							}
							h.Free(mine[k])
							mine[k] = mine[len(mine)-1]
							mine = mine[:len(mine)-1]
						}
					}
					for _, b := range mine {
						if err := checkFill(b); err != nil {
							errs <- err
						}
						h.Free(b)
					}
				}()
			}
			wg.Wait()
			close(stopTrims)
			trimmer.Wait()
			close(handoff)
			freers.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if trims == 0 {
				t.Fatal("no Trim ran during the stress")
			}
			s := h.Stats()
			if s.InUseBytes != 0 || s.Allocs != s.Frees || s.Allocs != uint64(workers*ops) {
				t.Fatalf("after the stress: Allocs %d Frees %d InUseBytes %d, want %d allocs", s.Allocs, s.Frees, s.InUseBytes, workers*ops)
			}
		})
	}
}

// TestManyPs runs goroutines on P ids at and above maxProcs, which have no
// magazine of their own and use the central lists. It shows that path works
// and counts; it cannot show the aliasing it guards against (P maxProcs+1
// sharing P 1's magazine) on a machine with few CPUs, where the two rarely
// run at the same moment: with mag's bounds check removed it still passed
// here, so that check stands on its reading, not on this test.
func TestManyPs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a thousand Ps")
	}
	old := runtime.GOMAXPROCS(maxProcs + 64)
	defer runtime.GOMAXPROCS(old)
	h := newTestHeap(t, Options{})
	var wg sync.WaitGroup
	var high atomic.Bool
	errs := make(chan error, 1)
	for range maxProcs + 64 {
		wg.Go(func() {
			var mine [][]byte
			for i := range 200 {
				if pid := pin.Pin(); pid >= maxProcs {
					high.Store(true)
				}
				pin.Unpin()
				b := h.Alloc(16 + i%200)
				fill(b)
				mine = append(mine, b)
				if i%2 == 1 {
					for _, x := range mine {
						if err := checkFill(x); err != nil {
							select {
							case errs <- err:
							default:
							}
						}
						h.Free(x)
					}
					mine = mine[:0]
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if !high.Load() {
		t.Skip("no goroutine ran on a P id at or above maxProcs: the path was not exercised")
	}
	if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != uint64((maxProcs+64)*200) {
		t.Fatalf("Allocs %d InUseBytes %d", s.Allocs, s.InUseBytes)
	}
}
