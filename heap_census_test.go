package offheap

import (
	"errors"
	"fmt"
	"testing"
)

// census is what a test expects Stats to say.
type census struct {
	allocs, frees, large uint64
	inUse                uint64
}

// checkCensus compares Stats with the test's own count of operations.
func checkCensus(s Stats, want census) error {
	var errs []error
	if s.Allocs != want.allocs {
		errs = append(errs, fmt.Errorf("Allocs = %d, want %d", s.Allocs, want.allocs))
	}
	if s.Frees != want.frees {
		errs = append(errs, fmt.Errorf("Frees = %d, want %d", s.Frees, want.frees))
	}
	if s.Large != want.large {
		errs = append(errs, fmt.Errorf("Large = %d, want %d", s.Large, want.large))
	}
	if s.InUseBytes != want.inUse {
		errs = append(errs, fmt.Errorf("InUseBytes = %d, want %d", s.InUseBytes, want.inUse))
	}
	if sum := s.MagazineHits + s.LocalHits + s.CentralHits + s.Fresh + s.Large; sum != s.Allocs {
		errs = append(errs, fmt.Errorf("MagazineHits+LocalHits+CentralHits+Fresh+Large = %d, Allocs = %d", sum, s.Allocs))
	}
	var ca, cf uint64
	for _, c := range s.Classes {
		ca += c.Allocs
		cf += c.Frees
		if c.InUse != c.Allocs-c.Frees {
			errs = append(errs, fmt.Errorf("class %d: InUse %d != Allocs %d - Frees %d", c.Size, c.InUse, c.Allocs, c.Frees))
		}
	}
	if ca+s.Large != s.Allocs {
		errs = append(errs, fmt.Errorf("class Allocs sum %d + Large %d != Allocs %d", ca, s.Large, s.Allocs))
	}
	return errors.Join(errs...)
}

// largeBlock reports whether a block of n bytes is a large one (page run),
// as Stats.Large counts them: in checked mode, its canary counts too.
func largeBlock(n int) bool {
	if buildChecked {
		n += canaryLen
	}
	return n > maxSmall
}

// blockBytes is the bytes a block of n occupies: its class size or pages.
func blockBytes(n int) uint64 {
	if buildChecked {
		return blockBytesChecked(n) // a trailing canary, and a minimum (checked_small.go)
	}
	if n > maxSmall {
		return uint64((n + pageSize - 1) &^ (pageSize - 1))
	}
	return uint64(classSize[sizeClass(n)])
}

func TestCensusExact(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, unprofiled(arm.opts))
			var want census
			var live [][]byte
			for i := range 20000 {
				n := 1 + (i*7919)%5000
				if i%97 == 0 {
					n = maxSmall + 1 + i
					want.large++
				}
				live = append(live, h.Alloc(n))
				want.allocs++
				want.inUse += blockBytes(n)
				if i%3 != 0 {
					b := live[0]
					live = live[1:]
					h.Free(b)
					want.frees++
					want.inUse -= blockBytes(len(b))
				}
			}
			if err := checkCensus(h.Stats(), want); err != nil {
				t.Fatal(err)
			}
			s := h.Stats()
			if arm.opts.MagazineDepth < 0 && s.MagazineHits != 0 {
				t.Fatalf("magazines off, but MagazineHits = %d", s.MagazineHits)
			}
			if arm.opts.MagazineDepth >= 0 && s.MagazineHits == 0 && !buildChecked { // checked: no magazines
				t.Fatalf("magazines on, but MagazineHits = 0")
			}
			for _, b := range live {
				h.Free(b)
				want.frees++
				want.inUse -= blockBytes(len(b))
			}
			if err := checkCensus(h.Stats(), want); err != nil {
				t.Fatal(err)
			}
			h.Close()
			if err := checkCensus(h.Stats(), want); err != nil {
				t.Fatalf("after Close: %v", err)
			}
		})
	}
}

// TestCensusControl is the positive control for checkCensus: one operation
// the census did not see must be reported.
func TestCensusControl(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.Alloc(64)
	h.Free(b)
	b = h.Alloc(64)                     // a magazine hit
	want := census{allocs: 1, frees: 1} // misses the second Alloc
	if err := checkCensus(h.Stats(), want); err == nil {
		t.Fatal("checkCensus accepted a census one Alloc short")
	}
	h.Free(b)
}
