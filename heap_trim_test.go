package offheap

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTrimAllPs fills the magazines of several Ps (and, in checked mode,
// their quarantine rings) and shows that Trim empties every one of them,
// not only the calling P's. The positive control is draining the calling
// P's alone.
func TestTrimAllPs(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs 2 Ps")
	}
	// held counts the Ps whose magazine (and, in checked mode, quarantine
	// ring) holds blocks, and the blocks in every magazine and ring, in
	// service or not.
	held := func(h *Heap) (ps int, blocks uint32) {
		count := func(m *magazine) (n uint32) {
			for c := 1; c < numClasses; c++ {
				n += m.cls[c].n
			}
			return n
		}
		for _, m := range h.mags.all {
			blocks += count(m)
		}
		for i := range maxProcs {
			var n uint32
			if m := h.mags.at[i].Load(); m != nil {
				n += count(m)
			}
			if h.chk != nil {
				if p := h.chk.q.rings.at[i].Load(); p != nil {
					n += p.n
				}
			}
			if n > 0 {
				ps++
			}
		}
		if h.chk != nil {
			for _, p := range h.chk.q.rings.all {
				blocks += p.n
			}
		}
		return ps, blocks
	}
	fill := func(h *Heap) {
		w := runtime.GOMAXPROCS(0)
		var started atomic.Int32
		var wg sync.WaitGroup
		for range w {
			wg.Go(func() {
				started.Add(1)
				for started.Load() < int32(w) {
					// spin, so that every worker holds a P of its own
				}
				var bs [][]byte
				for i := range 300 {
					bs = append(bs, h.Alloc(16+i%700))
				}
				for _, b := range bs {
					h.Free(b)
				}
			})
		}
		wg.Wait()
	}
	h := newTestHeap(t, Options{ReleaseDelay: time.Hour})
	fill(h)
	if ps, _ := held(h); ps < 2 {
		t.Skipf("the workers left blocks on %d P(s): they did not run on 2 Ps", ps)
	}
	h.Trim()
	if ps, blocks := held(h); blocks != 0 {
		t.Fatalf("after Trim %d blocks are still held, on %d P(s)", blocks, ps)
	}
	if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != s.Frees {
		t.Fatalf("Stats after Trim: %+v", s)
	}
	// The Ps get their magazines back, and the census goes on.
	fill(h)
	if s := h.Stats(); s.Allocs != s.Frees || s.Allocs != uint64(2*300*runtime.GOMAXPROCS(0)) || s.MagazineHits == 0 {
		t.Fatalf("Stats after a second fill: Allocs %d, Frees %d, MagazineHits %d", s.Allocs, s.Frees, s.MagazineHits)
	}

	// Control: draining the calling P's magazine (and ring) alone leaves
	// the others.
	h2 := newTestHeap(t, Options{ReleaseDelay: time.Hour})
	fill(h2)
	if ps, _ := held(h2); ps >= 2 {
		if h2.chk != nil {
			h2.chk.flushLocal()
		} else {
			h2.drainLocalMagazine()
		}
		if _, blocks := held(h2); blocks == 0 {
			t.Fatal("control: draining one P emptied every magazine: the test cannot tell")
		}
	}
}

func TestTrimReleases(t *testing.T) {
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, Options{MagazineDepth: arm.opts.MagazineDepth, ReleaseDelay: time.Hour})
			var live [][]byte
			for i := range 4000 {
				live = append(live, h.Alloc(16+i%2000), h.Alloc(50_000))
			}
			for _, b := range live {
				h.Free(b)
			}
			before := h.Stats()
			h.Trim()
			after := h.Stats()
			if after.ReleasedBytes <= before.ReleasedBytes || after.MappedBytes >= before.MappedBytes/4 {
				t.Fatalf("Trim released too little: before mapped %d released %d, after mapped %d released %d",
					before.MappedBytes, before.ReleasedBytes, after.MappedBytes, after.ReleasedBytes)
			}
			// What Trim leaves: at most a span per class, and the heap's
			// own metadata.
			reach := uint64((numClasses-1)*11*pageSize) + 1<<20
			if after.MappedBytes > reach {
				t.Fatalf("after Trim %d bytes still mapped, more than %d", after.MappedBytes, reach)
			}
			// Released memory is reused, and reads as zero.
			b := h.Alloc(50_000)
			for _, x := range b {
				if x != 0 {
					t.Fatal("reused released memory is not zero")
				}
			}
			h.Free(b)
		})
	}
}

func TestReleaseDelay(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode keeps freed blocks in quarantine until pushed out, Trim or Close")
	}
	h := newTestHeap(t, Options{ReleaseDelay: 20 * time.Millisecond})
	b := h.Alloc(1 << 20)
	h.Free(b)
	if s := h.Stats(); s.ReleasedBytes != 0 {
		t.Fatalf("released at once: %+v", s)
	}
	waitFor(t, func() string {
		return fmt.Sprintf("free pages not released after the delay: %+v", h.Stats())
	}, func() bool { return h.Stats().ReleasedBytes >= 1<<20 })
}
