package offheap

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestLocalStress: workers, each with its own Local, allocate
// pattern-filled blocks and free them through their Locals, the heap, or
// another worker's (by handing them over a channel); every block's pattern
// is intact when freed, and the census is exact at the end.
func TestLocalStress(t *testing.T) {
	for _, arm := range modeArms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			const workers = 4
			ops := 20000
			if testing.Short() || arm.opts.Checked {
				ops = 3000
			}
			handoff := make(chan []byte, 64)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var errs []error
			for w := range workers {
				wg.Go(func() {
					c := h.NewLocal()
					defer c.Close()
					rng := rand.New(rand.NewPCG(uint64(w), 9))
					var live [][]byte
					free := func(b []byte) {
						if err := checkFill(b); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
						if rng.IntN(4) == 0 {
							h.Free(b)
						} else {
							c.Free(b)
						}
					}
					for i := range ops {
						n := 1 + rng.IntN(2000)
						if rng.IntN(50) == 0 {
							n = 1 + rng.IntN(maxSmall+100_000)
						}
						var b []byte
						if i%2 == 0 {
							b = c.Alloc(n)
						} else {
							b = c.AllocUnzeroed(n)
						}
						fill(b)
						live = append(live, b)
						switch {
						case len(live) > 40:
							j := rng.IntN(len(live))
							free(live[j])
							live[j] = live[len(live)-1]
							live = live[:len(live)-1]
						case rng.IntN(8) == 0:
							select {
							case handoff <- live[len(live)-1]:
								live = live[:len(live)-1]
							case b := <-handoff:
								free(b)
							}
						}
					}
					for _, b := range live {
						free(b)
					}
					for {
						select {
						case b := <-handoff:
							free(b)
						default:
							return
						}
					}
				})
			}
			wg.Wait()
			for b := range len(handoff) {
				_ = b
				h.Free(<-handoff)
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			s := h.Stats()
			if s.Allocs != s.Frees || s.LiveBlocks != 0 || s.InUseBytes != 0 || s.LocalBytes != 0 {
				t.Fatalf("after every block was freed and every Local closed: %v", s)
			}
			if err := checkCensus(s, census{allocs: s.Allocs, frees: s.Allocs, large: s.Large}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
