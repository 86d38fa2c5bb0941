package offheap

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/offheap/offheap/internal/pageheap"
)

// TestSampledBlock: a block the profile sampled (ProfileBytes 1 samples
// every allocation) is a page run of its own that behaves as any block:
// Alloc's shape and zeroing, Realloc, Ref and Bytes, Free; a second Free or
// a Free inside it panics with offheap's message; the census counts it as a
// large block while it lives, and the profile counts its Free.
func TestSampledBlock(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap does not profile")
	}
	h := newTestHeap(t, Options{ProfileBytes: 1}) // every block sampled
	b := h.Alloc(100)
	if len(b) != 100 || cap(b) != 100 || addrOf(b)&(pageSize-1) != 0 {
		t.Fatalf("a sampled Alloc(100): len %d cap %d at %#x, want a page of its own", len(b), cap(b), addrOf(b))
	}
	if page, _ := h.pages.PageOf(addrOf(b)); uint8(*h.pages.Entry(page)) != pageheap.ClassSampled {
		t.Fatal("the sampled block's page is not marked classSampled")
	}
	if s := h.Stats(); s.Large != 1 || s.InUseBytes != pageSize {
		t.Errorf("Stats with one sampled block: Large %d, InUseBytes %d; want 1 and a page", s.Large, s.InUseBytes)
	}
	copy(b, "sampled")
	r := h.Ref(b)
	if got := h.Bytes(r); !bytes.Equal(got, b) {
		t.Errorf("Bytes(Ref(b)) = %q, want b", got[:7])
	}
	b = h.Realloc(b, 200)
	if string(b[:7]) != "sampled" || len(b) != 200 {
		t.Fatalf("Realloc of a sampled block: %q, len %d", b[:7], len(b))
	}
	if msg := mustPanic(t, func() { h.Free(b[8:]) }); !strings.HasPrefix(msg, "offheap: Free of") {
		t.Errorf("Free inside a sampled block: %q", msg)
	}
	if msg := mustPanic(t, func() { h.Free(b[16:]) }); !strings.Contains(msg, "16 bytes into the block") {
		t.Errorf("Free 16 bytes into a sampled block: %q", msg)
	}
	s := h.NewShared(100) // a Shared's bytes are 16 into its block
	if msg := mustPanic(t, func() { h.Free(s.Bytes()) }); !strings.Contains(msg, "bytes of a Shared") {
		t.Errorf("Free of a sampled Shared's bytes: %q", msg)
	}
	s.Release()
	h.Free(b)
	if msg := mustPanic(t, func() { h.Free(b) }); !strings.Contains(msg, "double free of") {
		t.Errorf("a second Free of a sampled block: %q", msg)
	}
	if bytes, blocks := h.InUse(); bytes != 0 || blocks != 0 {
		t.Errorf("InUse after every Free: %d bytes, %d blocks", bytes, blocks)
	}
	p := h.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.live) != 0 {
		t.Errorf("%d sampled blocks live in the profile after every Free", len(p.live))
	}
	var allocs, frees uint64
	for _, bk := range p.buckets {
		allocs += bk.allocs
		frees += bk.frees
	}
	if allocs != 3 || frees != 3 { // Alloc, Realloc's move, the Shared
		t.Errorf("the profile counts %d allocs and %d frees, want 3 and 3", allocs, frees)
	}
}

// TestSampledReallocAfterFree: a Realloc, or a second Free, of a sampled
// block already freed panics as a double free and changes nothing, though
// the freed run waits in the profile's stash, where the new block's own
// sample would take it back and hand the caller a block the stash still
// holds.
func TestSampledReallocAfterFree(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap does not profile")
	}
	h := newTestHeap(t, Options{ProfileBytes: 1}) // every block sampled
	for _, n := range []int{16, 100, 5000} {
		b := h.Alloc(n)
		a := addrOf(b)
		h.Free(b)
		if !h.prof.kept(a) {
			t.Fatalf("the freed %d-byte sample's run is not in the stash", n)
		}
		for _, re := range []struct {
			name string
			f    func([]byte, int) []byte
		}{{"Realloc", h.Realloc}, {"ReallocUnzeroed", h.ReallocUnzeroed}, {"Free", func(b []byte, _ int) []byte { h.Free(b); return nil }}} {
			for _, m := range []int{n, n + 1, 2 * maxSmall} {
				msg := sharedPanic(func() { re.f(b, m) })
				if want := fmt.Sprintf("offheap: double free of %#x (", a); !strings.HasPrefix(msg, want) {
					t.Errorf("%s(%d) of a freed %d-byte sample: panic %q, want one starting %q", re.name, m, n, msg, want)
				}
			}
		}
		if bytes, blocks := h.InUse(); bytes != 0 || blocks != 0 {
			t.Fatalf("InUse after the refused Reallocs of a freed %d-byte sample: %d bytes, %d blocks", n, bytes, blocks)
		}
		// The stash holds the run once: two samples do not get it.
		x, y := h.Alloc(n), h.Alloc(n)
		if addrOf(x) == addrOf(y) {
			t.Fatalf("two %d-byte samples at %#x", n, addrOf(x))
		}
		h.Free(x)
		h.Free(y)
	}
}

// TestProfileScale: scaleSample undoes the sampling's odds, as the
// runtime's scaleHeapSample does, and leaves a rate of 1 (every block
// sampled) alone.
func TestProfileScale(t *testing.T) {
	// A block as large as the rate is sampled with odds 1-1/e: 1000
	// samples stand for 1000/(1-1/e) = 1581.98 blocks, 6479776 bytes.
	if n, b := scaleSample(1000, 4096, 4096); n != 1581 || b != 6479776 {
		t.Errorf("scaleSample(1000, 4096, 4096) = %d, %d; want 1581, 6479776", n, b)
	}
	if n, b := scaleSample(3, 64, 1); n != 3 || b != 192 {
		t.Errorf("at rate 1: %d, %d; want 3, 192", n, b)
	}
	if n, b := scaleSample(0, 64, 4096); n != 0 || b != 0 {
		t.Errorf("no samples: %d, %d", n, b)
	}
}

// TestLocalProfiled: a Local's allocations are sampled as the heap's are,
// those its stacks serve included. At ProfileBytes 512, a 64-byte block is
// sampled with odds 1-exp(-1/8), 11.75%: 4000 pairs through a Local, whose
// stack serves all but its first Alloc, take some 470 samples (a standard
// deviation of 20); with the stacks never declining for a sample, there
// would be one or none.
func TestLocalProfiled(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap does not profile")
	}
	h := newTestHeap(t, Options{ProfileBytes: 512})
	c := h.NewLocal()
	defer c.Close()
	sampled := 0
	for i := range 4000 {
		var b []byte
		if i%2 == 0 {
			b = c.Alloc(64)
		} else {
			b = c.AllocUnzeroed(64)
		}
		if page, _ := h.pages.PageOf(addrOf(b)); uint8(*h.pages.Entry(page)) == pageheap.ClassSampled {
			sampled++
		}
		c.Free(b)
	}
	if sampled < 300 || sampled > 650 {
		t.Errorf("%d of 4000 Allocs through a Local sampled, want about 470", sampled)
	}
	p := h.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	var allocs, frees uint64
	for _, bk := range p.buckets {
		allocs += bk.allocs
		frees += bk.frees
	}
	if allocs != uint64(sampled) || frees != uint64(sampled) {
		t.Errorf("the profile counts %d allocs and %d frees, want %d of each", allocs, frees, sampled)
	}
}

// TestSampledRunsKept: the run a freed sampled block leaves is kept for the
// next sample of its size, even where freed pages go back to the operating
// system at once (ReleaseDelay < 0), so that a sample costs no system call
// and no page fault; census as for any Free; Trim gives the runs back.
func TestSampledRunsKept(t *testing.T) {
	if buildChecked {
		t.Skip("a checked heap does not profile")
	}
	h := newTestHeap(t, Options{ProfileBytes: 1, ReleaseDelay: -1}) // every block sampled
	const n = 64 << 10
	b := h.AllocUnzeroed(n)
	first := addrOf(b)
	h.Free(b)
	if s := h.Stats(); s.ReleasedBytes != 0 || s.InUseBytes != 0 || s.LiveBlocks != 0 {
		t.Fatalf("after a sampled block's Free: %d bytes released, %d in use, %d live; want its run kept and counted freed",
			s.ReleasedBytes, s.InUseBytes, s.LiveBlocks)
	}
	for range 100 {
		b = h.Alloc(n)
		if addrOf(b) != first {
			t.Fatalf("a sample of the same size got %#x, not the kept run at %#x", addrOf(b), first)
		}
		if b[0] != 0 || b[n-1] != 0 {
			t.Fatal("Alloc from a kept run: not zeroed")
		}
		b[0], b[n-1] = 1, 1
		h.Free(b)
	}
	if msg := mustPanic(t, func() { h.Free(b) }); !strings.Contains(msg, "double free of") {
		t.Errorf("a second Free of a kept run's block: %q", msg)
	}
	h.Trim()
	if s := h.Stats(); s.ReleasedBytes < n {
		t.Errorf("after Trim: %d bytes released, want the kept run's %d", s.ReleasedBytes, n)
	}
}
