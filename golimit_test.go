package offheap

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"
)

// limitBefore sets a distinctive Go memory limit for the test, so that a
// stop that restores the wrong one shows, and restores the process's at the
// end.
func limitBefore(t *testing.T) int64 {
	const before = 7 << 30
	prev := debug.SetMemoryLimit(before)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	return before
}

// waitLimit polls the runtime's memory limit until it is within tol of
// want (waitFor). (The heap moves it before the Alloc or Free that changed
// its mapped bytes returns; the test does not rely on that, and a release
// timer moves it when it fires.)
func waitLimit(t *testing.T, when string, want, tol int64) {
	t.Helper()
	var got int64
	waitFor(t, func() string {
		return fmt.Sprintf("%s: the Go memory limit is %s, want %s (within %s)", when, mib(got), mib(want), mib(tol))
	}, func() bool {
		got = debug.SetMemoryLimit(-1)
		return got >= want-tol && got <= want+tol
	})
}

func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

func allocMiB(h *Heap, n int) [][]byte {
	var bs [][]byte
	for range n {
		bs = append(bs, h.Alloc(1<<20))
	}
	return bs
}

func freeAll(h *Heap, bs [][]byte) {
	for _, b := range bs {
		h.Free(b)
	}
	h.Trim()
}

// TestLimitGoMemory maps 100 MiB under LimitGoMemory(1 GiB): the runtime's
// limit goes down by 100 MiB, comes back when the memory is freed and
// trimmed, and stop restores the limit set before.
func TestLimitGoMemory(t *testing.T) {
	before := limitBefore(t)
	h := newTestHeap(t, Options{ReleaseDelay: -1})
	const total = 1 << 30
	stop := LimitGoMemory(total, h)
	if got := debug.SetMemoryLimit(-1); got != total {
		t.Errorf("on return, with nothing mapped: the Go memory limit is %s, want %s", mib(got), mib(total))
	}
	bs := allocMiB(h, 100)
	waitLimit(t, "100 MiB mapped off-heap", total-100<<20, 2<<20)
	freeAll(h, bs)
	waitLimit(t, "after Free and Trim", total, 2<<20)
	stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after stop: the Go memory limit is %s, want %s as before", mib(got), mib(before))
	}
	stop() // a second stop does nothing
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after a second stop: the Go memory limit is %s, want %s", mib(got), mib(before))
	}
	bs = allocMiB(h, 10) // no longer followed: the limit stays
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("mapping after stop: the Go memory limit is %s, want %s", mib(got), mib(before))
	}
	freeAll(h, bs)
}

// TestLimitGoMemoryReleaseTimer frees without Trim: the limit goes back up
// when the heap's release timer gives the pages back.
func TestLimitGoMemoryReleaseTimer(t *testing.T) {
	limitBefore(t)
	h := newTestHeap(t, Options{ReleaseDelay: 10 * time.Millisecond})
	stop := LimitGoMemory(1<<30, h)
	defer stop()
	bs := allocMiB(h, 50)
	waitLimit(t, "50 MiB mapped", 1<<30-50<<20, 2<<20)
	for _, b := range bs {
		h.Free(b)
	}
	tol := int64(2 << 20)
	if h.chk != nil {
		tol += int64(h.chk.q.maxBytes) // checked mode: the quarantine keeps the last blocks freed
	}
	waitLimit(t, "freed, after the release delay", 1<<30, tol)
}

// TestLimitGoMemoryFloor maps more than the total: the limit stops at the
// floor.
func TestLimitGoMemoryFloor(t *testing.T) {
	limitBefore(t)
	h := newTestHeap(t, Options{ReleaseDelay: -1})
	const total = 256 << 20
	stop := LimitGoMemory(total, h)
	defer stop()
	bs := allocMiB(h, 150)
	waitLimit(t, "150 of 256 MiB mapped", total-150<<20, 2<<20) // above the floor
	more := allocMiB(h, 100)
	waitLimit(t, "250 of 256 MiB mapped", goLimitFloorMin, 0)
	freeAll(h, more)
	freeAll(h, bs)
	waitLimit(t, "after Free and Trim", total, 2<<20)
}

// TestLimitGoMemoryOverlap runs two limits at once on two heaps: the
// runtime's limit is the lower bound, and the limit from before comes back
// when the last one stops, in either order.
func TestLimitGoMemoryOverlap(t *testing.T) {
	before := limitBefore(t)
	h1 := newTestHeap(t, Options{ReleaseDelay: -1})
	h2 := newTestHeap(t, Options{ReleaseDelay: -1})
	for _, firstStops := range []string{"outer", "inner"} {
		t.Run(firstStops+" stops first", func(t *testing.T) {
			outer := LimitGoMemory(1<<30, h1)
			b1 := allocMiB(h1, 100)
			waitLimit(t, "outer alone", 1<<30-100<<20, 2<<20)
			inner := LimitGoMemory(512<<20, h2)
			b2 := allocMiB(h2, 50)
			waitLimit(t, "both", 512<<20-50<<20, 2<<20) // the lower bound: 462 MiB against 924
			if firstStops == "outer" {
				outer()
				waitLimit(t, "the inner alone", 512<<20-50<<20, 2<<20)
				inner()
			} else {
				inner()
				waitLimit(t, "the outer alone", 1<<30-100<<20, 2<<20)
				outer()
			}
			if got := debug.SetMemoryLimit(-1); got != before {
				t.Errorf("after both stopped: the Go memory limit is %s, want %s as before", mib(got), mib(before))
			}
			freeAll(h1, b1)
			freeAll(h2, b2)
		})
	}
}

// TestLimitGoMemoryDefault counts the Default heap when no heap is given.
func TestLimitGoMemoryDefault(t *testing.T) {
	limitBefore(t)
	h := Default()
	base := int64(h.mappedBytes())
	stop := LimitGoMemory(1 << 30)
	defer stop()
	bs := allocMiB(h, 20)
	defer freeAll(h, bs)
	waitLimit(t, "20 MiB on the Default heap", 1<<30-base-20<<20, 2<<20)
}

func TestLimitGoMemoryRefuses(t *testing.T) {
	expectPanic(t, "offheap: LimitGoMemory: total 0 is not positive", func() { LimitGoMemory(0) })
	expectPanic(t, "offheap: LimitGoMemory: heap 1 is nil", func() { LimitGoMemory(1<<30, Default(), nil) })
}

// BenchmarkGoLimit is the cost of following a limit: applying it when the
// heaps' mapped bytes did not move the bound and when they did
// (SetMemoryLimit called), and SetMemoryLimit alone.
func BenchmarkGoLimit(b *testing.B) {
	h := newTestHeap(b, Options{ReleaseDelay: -1})
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	stop := LimitGoMemory(1<<30, h)
	defer stop()
	b.Run("arm=apply-unchanged", func(b *testing.B) {
		for b.Loop() {
			followGoLimit()
		}
	})
	b.Run("arm=apply-changed", func(b *testing.B) {
		for b.Loop() {
			goLimits.mu.Lock()
			goLimits.set = 0 // as if the heap's mapped bytes had moved
			applyGoLimit()
			goLimits.mu.Unlock()
		}
	})
	b.Run("arm=SetMemoryLimit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			debug.SetMemoryLimit(1<<30 - int64(i&1)<<20)
		}
	})
}

// BenchmarkGoLimitFollow is what following costs the page heap: a 1 MiB
// block allocated and freed on a heap that releases at once, so that each
// Alloc and each Free changes its mapped bytes (an madvise for the Free),
// without a limit and with one in force.
func BenchmarkGoLimitFollow(b *testing.B) {
	h := newTestHeap(b, Options{ReleaseDelay: -1})
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	b.Run("arm=unlimited", func(b *testing.B) {
		for b.Loop() {
			h.Free(h.Alloc(1 << 20))
		}
	})
	b.Run("arm=limited", func(b *testing.B) {
		stop := LimitGoMemory(1<<30, h)
		defer stop()
		for b.Loop() {
			h.Free(h.Alloc(1 << 20))
		}
	})
}
