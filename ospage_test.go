package offheap

import (
	"testing"
	"time"
)

// TestOSPageNeighbours: giving pages back works on whole OS pages and never
// reaches a neighbour in use, whatever the OS page; run it under the tags
// offheappage16k and offheappage64k (internal/osmem), where an OS page holds
// 2 or 8 heap pages. Runs of 33 heap pages, which straddle OS pages of any
// of those sizes, are freed every other one and given back: the ones
// between keep their bytes; the pages left dirty are the parked ones, less
// than an OS page at each end of each freed run, none with 4 KiB pages, and
// the timer has no reason to come back for them; once the runs between are
// freed too, every page goes back.
func TestOSPageNeighbours(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap's quarantine holds freed runs back from the page heap")
	}
	const runs = 32
	const size = 33*pageSize - 64 // 33 pages with a checked block's canary too
	for _, delay := range []time.Duration{-1, time.Hour} {
		h := newTestHeap(t, unprofiled(Options{ReleaseDelay: delay}))
		ph := &h.pages
		dirtyFree := func() uint64 { // bytes committed, not clean, not in use
			ph.mu.Lock()
			defer ph.mu.Unlock()
			return (ph.committed - ph.released - ph.largePages.Load()) << pageShift
		}
		var bs [runs][]byte
		for i := range bs {
			bs[i] = h.Alloc(size)
			for j := range bs[i] {
				bs[i][j] = byte(i + 1)
			}
		}
		for i := 0; i < runs; i += 2 {
			h.Free(bs[i])
		}
		h.Trim()
		for i := 1; i < runs; i += 2 {
			for j, v := range bs[i] {
				if v != byte(i+1) {
					t.Fatalf("ReleaseDelay %v: byte %d of run %d (of 33 pages, at %#x) is %#x after its neighbours were freed and given back, want %#x",
						delay, j, i, addrOf(bs[i]), v, byte(i+1))
				}
			}
		}
		parked := dirtyFree()
		if most := uint64(runs/2*2*(osPagePages-1)) << pageShift; parked > most {
			t.Errorf("ReleaseDelay %v: %d bytes of free pages dirty after Trim, want at most %d: less than an OS page (%d) at each end of each freed run",
				delay, parked, most, osPageBytes)
		}
		ph.mu.Lock()
		_, left, _ := ph.releaseDue(0, false)
		ph.mu.Unlock()
		if left {
			t.Errorf("ReleaseDelay %v: the release timer would come back for %d bytes of parked pages, which only a Free can let go", delay, parked)
		}
		for i := 1; i < runs; i += 2 {
			h.Free(bs[i])
		}
		if delay > 0 {
			h.Trim()
		}
		if d := dirtyFree(); d != 0 {
			t.Errorf("ReleaseDelay %v: %d bytes of free pages dirty once every run is freed and given back, want 0", delay, d)
		}
		if s := h.Stats(); s.MappedBytes != 0 || s.ReleasedBytes == 0 {
			t.Errorf("ReleaseDelay %v: MappedBytes %d, ReleasedBytes %d once every run is freed and given back; want 0 mapped", delay, s.MappedBytes, s.ReleasedBytes)
		}
		h.Close()
	}
}
