package offheap

import (
	"testing"
	"time"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestOSPageNeighbours: giving pages back works on whole OS pages and never
// reaches a neighbour in use, whatever the OS page; run it under the tags
// offheappage16k and offheappage64k (internal/osmem), where an OS page holds
// 2 or 8 heap pages. Runs of 1, 3 and 33 heap pages, which straddle OS
// pages of those sizes (those of an OS page or more start on one), are
// freed every other one and given back: the ones
// between keep their bytes; the pages left dirty are the parked ones, less
// than an OS page at each end of each freed run, none with 4 KiB pages, and
// the timer has no reason to come back for them; once the runs between are
// freed too, every page goes back.
func TestOSPageNeighbours(t *testing.T) {
	const runs = 32
	for _, np := range []uint32{1, 3, 33} {
		for _, delay := range []time.Duration{-1, time.Hour} {
			h := newTestHeap(t, unprofiled(Options{ReleaseDelay: delay}))
			ph := &h.pages
			dirtyFree := func() uint64 { // bytes committed, not clean, not in use
				ph.Mu.Lock()
				defer ph.Mu.Unlock()
				return (ph.Committed - ph.Released - ph.LargePages.Load()) << pageShift
			}
			var bs [runs][]byte
			for i := range bs {
				a, _, err := ph.AllocRun(np, 1, pageheap.ClassLarge)
				if err != nil {
					t.Fatal(err)
				}
				if np >= pageheap.OSPagePages && a%pageheap.OSPageBytes != 0 {
					t.Fatalf("a run of %d pages at %#x: not on an OS page (%d bytes)", np, a, pageheap.OSPageBytes)
				}
				bs[i] = bytesAt(a, int(np)<<pageShift)
				for j := range bs[i] {
					bs[i][j] = byte(i + 1)
				}
			}
			for i := 0; i < runs; i += 2 {
				ph.FreeRun(addrOf(bs[i]), pageheap.ClassLarge)
			}
			h.Trim()
			for i := 1; i < runs; i += 2 {
				for j, v := range bs[i] {
					if v != byte(i+1) {
						t.Fatalf("runs of %d pages, ReleaseDelay %v: byte %d of run %d (at %#x) is %#x after its neighbours were freed and given back, want %#x",
							np, delay, j, i, addrOf(bs[i]), v, byte(i+1))
					}
				}
			}
			parked := dirtyFree()
			if most := uint64(runs/2*2*(pageheap.OSPagePages-1)) << pageShift; parked > most {
				t.Errorf("runs of %d pages, ReleaseDelay %v: %d bytes of free pages dirty after Trim, want at most %d: less than an OS page (%d) at each end of each freed run",
					np, delay, parked, most, pageheap.OSPageBytes)
			}
			ph.Mu.Lock()
			_, left, _ := ph.ReleaseDue(0, false)
			ph.Mu.Unlock()
			if left {
				t.Errorf("runs of %d pages, ReleaseDelay %v: the release timer would come back for %d bytes of parked pages, which only a Free can let go", np, delay, parked)
			}
			for i := 1; i < runs; i += 2 {
				ph.FreeRun(addrOf(bs[i]), pageheap.ClassLarge)
			}
			if delay > 0 {
				h.Trim()
			}
			if d := dirtyFree(); d != 0 {
				t.Errorf("runs of %d pages, ReleaseDelay %v: %d bytes of free pages dirty once every run is freed and given back, want 0", np, delay, d)
			}
			if s := h.Stats(); s.MappedBytes != 0 || s.ReleasedBytes == 0 {
				t.Errorf("runs of %d pages, ReleaseDelay %v: MappedBytes %d, ReleasedBytes %d once every run is freed and given back; want 0 mapped", np, delay, s.MappedBytes, s.ReleasedBytes)
			}
			h.Close()
		}
	}
}
