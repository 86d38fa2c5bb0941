package offheap

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
)

// TestReleaseDelayMerged: a page goes back to the system ReleaseDelay after
// its own Free (within a tick), not after the Free of the run it merged
// with, and the timer is armed for the next page due, not a full delay on.
// The clock is the test's, and the test fires the timer itself, so nothing
// depends on the scheduler.
func TestReleaseDelayMerged(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode keeps freed blocks in quarantine until pushed out, Trim or Close")
	}
	const delay = time.Hour // the real timer never fires during the test
	h := newTestHeap(t, Options{ReleaseDelay: delay})
	var now int64
	h.setClock(func() int64 { return now })
	tick := int64(delay / pageheap.ReleaseTicks)
	const n = 1 << 20
	a, b := h.Alloc(n), h.Alloc(n)
	if addrOf(b) != addrOf(a)+n {
		t.Fatalf("setup: blocks at %#x and %#x are not adjacent, so their runs would not merge", addrOf(a), addrOf(b))
	}
	h.Free(a) // at 0
	now = int64(delay / 2)
	h.Free(b) // at delay/2: one free run with a's pages
	released := func() uint64 { return h.Stats().ReleasedBytes }

	now = int64(delay) - tick // a's pages are not due yet
	if next := h.fireReleaseTimer(); released() != 0 || next != int64(delay)+tick {
		t.Fatalf("at delay-tick: released %d bytes, timer at %v; want 0 and delay+tick", released(), time.Duration(next))
	}
	now = int64(delay) + tick // a's are, b's are not
	next := h.fireReleaseTimer()
	if got := released(); got != n {
		t.Fatalf("at delay+tick: released %d bytes, want a's %d (merged runs must not wait for the newest page)", got, n)
	}
	if want := int64(delay/2+delay) + tick; next != want {
		t.Fatalf("timer re-armed for %v, want %v (b's pages due), not a full delay on", time.Duration(next), time.Duration(want))
	}
	now = next
	h.fireReleaseTimer()
	if got := released(); got != 2*n {
		t.Fatalf("at b's due time: released %d bytes, want %d", got, 2*n)
	}
}

// TestLimitAnyValue: every Limit works, up to math.MaxInt64, the natural
// way to say "no limit", and Close gives back every byte of address space.
func TestLimitAnyValue(t *testing.T) {
	for _, limit := range []int64{1 << 44, 1<<44 + pageSize, 1 << 45, 1<<62 + 1, math.MaxInt64} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			h, err := NewHeap(Options{Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			var live [][]byte
			for _, n := range []int{64, 5000, maxSmall + 1, 10 << 20} {
				b, err := h.TryAlloc(n)
				if err != nil {
					h.Close()
					t.Fatalf("TryAlloc(%d) with Limit %d: %v", n, limit, err)
				}
				live = append(live, b)
			}
			for _, b := range live {
				h.Free(b)
			}
			base, size := h.base, h.size
			if err := h.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if m := mapped(t, base, size); m != "" && !raceEnabled { // race builds: Go memory, see TestCloseUnmapsRegions
				t.Fatalf("after Close, the heap's first region is still mapped: %s", m)
			}
		})
	}
}

// TestCloseUnmapsRegions: Close gives back every region and its metadata,
// however many the heap grew, checked mode's record tables included.
func TestCloseUnmapsRegions(t *testing.T) {
	skipRace(t, "regions are Go memory, which Close leaves to the garbage collector")
	for _, checked := range []bool{false, true} {
		t.Run(fmt.Sprintf("checked=%v", checked), func(t *testing.T) {
			h, err := newHeap(Options{Checked: checked}, 16<<20)
			if err != nil {
				t.Fatal(err)
			}
			var live [][]byte
			for range 40 { // 40 MiB through a 16 MiB first region
				live = append(live, h.Alloc(1<<20), h.Alloc(100))
			}
			if h.regionCount() < 2 {
				t.Fatalf("setup: %d regions, want several", h.regionCount())
			}
			type span struct{ base, size uintptr }
			var spans []span
			for _, r := range h.pages.Regions.Load().ByPage {
				if r.Base&(pageSize-1) != 0 {
					t.Fatalf("region at %#x is not %d-byte aligned", r.Base, pageSize)
				}
				spans = append(spans, span{r.Base, r.Bytes})
				if r.Shadow != nil {
					spans = append(spans, span{uintptr(r.Shadow), r.Bytes})
				}
			}
			if checked && len(spans) != 2*h.regionCount() {
				t.Fatalf("checked heap: %d mappings for %d regions, want a record table each", len(spans), h.regionCount())
			}
			spans = append(spans, span{uintptr(h.pages.Pmap), h.pages.MetaBytes})
			for _, b := range live {
				h.Free(b)
			}
			if err := h.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for _, s := range spans {
				if m := mapped(t, s.base, s.size); m != "" {
					t.Errorf("after Close, [%#x, %#x) is still mapped: %s", s.base, s.base+s.size, m)
				}
			}
		})
	}
}

// mapped returns the line of /proc/self/maps that overlaps [base,
// base+size), or "".
func mapped(t *testing.T, base, size uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(sc.Text(), "%x-%x", &lo, &hi); err != nil {
			t.Fatalf("parsing %q: %v", sc.Text(), err)
		}
		if lo < base+size && base < hi {
			return sc.Text()
		}
	}
	return ""
}

// TestAddressSpaceGrows: a heap holds more than its first region, as the
// Go heap does: 80 GiB of untouched blocks on a machine with less memory.
func TestAddressSpaceGrows(t *testing.T) {
	skipRace(t, "the heap is Go memory, and 80 GiB of it is more than the Go heap should take")
	h := newTestHeap(t, Options{})
	const block = min(8<<30, math.MaxInt) // the bound: 32-bit systems compile this, and have no backend
	var big [][]byte
	for range 10 {
		b, err := h.TryAlloc(block)
		if err != nil {
			t.Fatalf("after %d GiB: %v", len(big)*block>>30, err)
		}
		b[0], b[block-1] = 1, 2
		big = append(big, b)
	}
	if h.regionCount() < 2 {
		t.Fatalf("80 GiB in %d region", h.regionCount())
	}
	for _, b := range big {
		if b[0] != 1 || b[block-1] != 2 {
			t.Fatal("a block's bytes changed")
		}
		h.Free(b)
	}
	if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != s.Frees {
		t.Fatalf("after freeing everything: %v", s)
	}
}

// TestLaterRegions: blocks of every kind in the regions after the first
// work as in region 0, their Frees found by the slow path's region lookup
// (and, in checked mode, their records in the regions' own tables), and
// misuse of them is caught the same way.
func TestLaterRegions(t *testing.T) {
	all := append(arms[:len(arms):len(arms)], struct {
		name string
		opts Options
	}{"checked", Options{Checked: true}})
	for _, arm := range all {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeapFirstRegion(t, arm.opts, 16<<20)
			var live, big [][]byte
			far := 0
			for i := 0; i < 8000; i++ {
				if i%1000 == 0 { // address space: three more regions
					big = append(big, h.Alloc(24<<20+i))
				}
				n := 16 + i*37%5000
				if i%100 == 0 {
					n = maxSmall - i
				}
				b := h.Alloc(n)
				if !h.pages.Contains(addrOf(b)) {
					t.Fatalf("block %#x is in no region", addrOf(b))
				}
				if addrOf(b)-h.base >= h.size {
					far++
				}
				if err := fillPattern(b, uint32(len(live))); err != nil {
					t.Fatal(err)
				}
				live = append(live, b)
			}
			if far == 0 || h.regionCount() < 3 {
				t.Fatalf("%d blocks outside region 0, %d regions: the test does not reach the later regions", far, h.regionCount())
			}
			var b []byte
			for _, x := range live {
				if addrOf(x)-h.base >= h.size && len(x) > 64 && len(x) <= maxSmall {
					b = x
				}
			}
			msg := mustPanic(t, func() { h.Free(b[16:]) })
			if !strings.Contains(msg, "not the start of a block") {
				t.Fatalf("Free inside a far block: %q", msg)
			}
			for i, x := range live {
				if !patternIntact(x, uint32(i)) {
					t.Fatalf("block %d (%d bytes at %#x) was overwritten", i, len(x), addrOf(x))
				}
				h.Free(x)
			}
			for _, x := range big {
				h.Free(x)
			}
			if arm.opts.Checked {
				me := memoryError(t, func() { h.Free(b) })
				if me.Kind != DoubleFree {
					t.Fatalf("double free of a far block: %v", me)
				}
			}
			h.Trim()
			if s := h.Stats(); s.InUseBytes != 0 || s.Allocs != s.Frees {
				t.Fatalf("after freeing everything: %v", s)
			}
		})
	}
}

// patternIntact reports whether b still holds fillPattern's bytes for seed.
func patternIntact(b []byte, seed uint32) bool {
	for i, v := range b {
		if v != patternByte(seed, i) {
			return false
		}
	}
	return true
}

// TestAddressSpaceExhausted: past the largest virtual space, an allocation
// fails with an error of its own that says what happened, and the heap
// stays usable.
func TestAddressSpaceExhausted(t *testing.T) {
	h := newTestHeap(t, Options{})
	// Nearly the largest block (checked mode adds a canary): no virtual space
	// with region 0 in it has room.
	_, err := h.TryAlloc(int(min(uint64(pageheap.MaxVirtPages-2)<<pageShift, math.MaxInt)))
	if err == nil || errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "address space") {
		t.Fatalf("an allocation of the whole virtual space: %v, want an address-space error that is not ErrLimit", err)
	}
	t.Log(err)
	h.Free(h.Alloc(1 << 20))
}

// TestMapRegionAligned: regions start on a page boundary of the heap's
// pages, wherever the system puts a mapping: small mappings between them
// shift the address space by a system page.
func TestMapRegionAligned(t *testing.T) {
	const n = 3 * pageSize
	for i := range 16 {
		if i%2 == 1 {
			p, err := osmem.Map(osmem.PageSize)
			if err != nil {
				t.Fatal(err)
			}
			defer osmem.Unmap(p, osmem.PageSize)
		}
		p, err := pageheap.MapRegion(n)
		if err != nil {
			t.Fatal(err)
		}
		defer pageheap.UnmapRegion(p, n)
		if uintptr(p)&(pageSize-1) != 0 {
			t.Fatalf("mapRegion returned %#x, not %d-byte aligned", p, pageSize)
		}
	}
}

// TestReleaseDelayHuge: a ReleaseDelay up to maxReleaseDelay arms the timer
// for the delay after the Free; a longer one, math.MaxInt64 included, arms
// none (where the sum once overflowed and the timer fired at once, for
// ever), and Trim still gives the pages back.
func TestReleaseDelayHuge(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode keeps freed blocks in quarantine until pushed out, Trim or Close")
	}
	for _, delay := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, 288 * 365 * 24 * time.Hour, pageheap.MaxReleaseDelay + 1, pageheap.MaxReleaseDelay, pageheap.MaxReleaseDelay - 1, time.Second} {
		h := newTestHeap(t, Options{ReleaseDelay: delay})
		now := int64(time.Hour)
		h.setClock(func() int64 { return now })
		h.Free(h.Alloc(1 << 20))
		at := h.releaseTimerAt()
		if delay <= pageheap.MaxReleaseDelay {
			if tick := int64(delay / pageheap.ReleaseTicks); at < now+int64(delay) || at > now+int64(delay)+tick {
				t.Fatalf("ReleaseDelay %d: timer at %d, want between %d and %d (the Free's time plus the delay and at most a tick)", delay, at, now+int64(delay), now+int64(delay)+tick)
			}
		} else {
			if at != 0 {
				t.Fatalf("ReleaseDelay %d (more than %v): timer armed at %d, want none", delay, pageheap.MaxReleaseDelay, at)
			}
			if next := h.fireReleaseTimer(); next != 0 || h.Stats().ReleasedBytes != 0 {
				t.Fatalf("ReleaseDelay %d: a fired timer re-armed at %d, released %d bytes", delay, next, h.Stats().ReleasedBytes)
			}
		}
		h.Trim()
		if got := h.Stats().ReleasedBytes; got < 1<<20 {
			t.Fatalf("ReleaseDelay %d: Trim released %d bytes", delay, got)
		}
		h.Close()
	}
}

// TestPagemapGivenBack: the pagemap words of a large run, written at its
// Alloc and its Free, go back to the system with the run's pages, by Trim
// and by the release timer: an untouched 16 GiB block costs 16 MiB of
// pagemap while it lives, and nothing once it is freed and released.
func TestPagemapGivenBack(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode keeps freed blocks in quarantine until pushed out, Trim or Close")
	}
	if raceOn {
		t.Skip("a race build's regions are Go memory: 16 GiB of it")
	}
	var n64 uint64 = 16 << 30
	if n64 > math.MaxInt {
		t.Skip("ints too small for a 16 GiB block")
	}
	n := int(n64)
	for _, how := range []string{"Trim", "timer"} {
		h := newTestHeap(t, Options{ReleaseDelay: time.Hour})
		var now int64
		h.setClock(func() int64 { return now })
		ph := &h.pages
		resident := func() uint64 {
			r, err := osmem.ResidentBytes(ph.Pmap, uintptr(ph.MaxPages)*8)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		h.Free(h.Alloc(64)) // the heap's first pages, and their words
		before := resident()
		b, err := h.TryAlloc(n)
		if err != nil {
			t.Skipf("no room for an untouched %d GiB block: %v", n>>30, err)
		}
		if live := resident(); live < before+n64/pageSize*8*7/8 {
			t.Fatalf("setup: the pagemap of a live %d GiB block: %d bytes resident, %d before", n>>30, live, before)
		}
		h.Free(b)
		if how == "Trim" {
			h.Trim()
		} else {
			now = int64(2 * time.Hour)
			h.fireReleaseTimer()
		}
		if after := resident(); after > before+64<<10 {
			t.Fatalf("%s: %d KiB of pagemap resident after the %d GiB block's Free, %d KiB before its Alloc", how, after>>10, n>>30, before>>10)
		}
		// The words given back read 0, free and clean, and the heap hands
		// the pages out again.
		b = h.Alloc(n)
		b[0], b[len(b)-1] = 1, 1
		h.Free(b)
		h.Close()
	}
}

// TestLimitAboveMemory: a Limit above the machine's memory is still a
// limit on mapped bytes, as Options.Limit says: it refuses an untouched
// block larger than itself, which a heap without a Limit grants.
func TestLimitAboveMemory(t *testing.T) {
	mem := osmem.Memory()
	if mem == 0 || mem > 1<<40 {
		t.Skipf("the machine's memory (%d bytes) is unknown or too large for the test", mem)
	}
	limit, n := int64(mem)+1<<30, int(mem+2<<30)
	h := newTestHeap(t, Options{Limit: limit})
	if _, err := h.TryAlloc(n); !errors.Is(err, ErrLimit) {
		t.Fatalf("TryAlloc(%d) under a Limit of %d above the machine's %d bytes: %v, want ErrLimit", n, limit, mem, err)
	}
	h0 := newTestHeap(t, Options{})
	b, err := h0.TryAlloc(n)
	if err != nil {
		t.Skipf("no room for an untouched %d-byte block without a Limit: %v", n, err)
	}
	h0.Free(b)
	if b, err := h.TryAlloc(int(limit) / 2); err != nil {
		t.Fatalf("after the refusal, TryAlloc(%d): %v", limit/2, err)
	} else {
		h.Free(b)
	}
}

// rwBytes is the bytes of /proc/self/maps's readable and writable mappings
// within [base, base+size).
func rwBytes(t *testing.T, base, size uintptr) uintptr {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	var n uintptr
	for line := range strings.Lines(string(b)) {
		var lo, hi uintptr
		var perms string
		if _, err := fmt.Sscanf(line, "%x-%x %s", &lo, &hi, &perms); err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		if lo < base+size && base < hi && strings.HasPrefix(perms, "rw") {
			n += min(hi, base+size) - max(lo, base)
		}
	}
	return n
}

// TestCommitAhead: a growing heap commits its region ahead of what it hands
// out, an eighth of what it has committed and at least commitAhead, so
// that a run at a time does not make an mprotect (which stalls the
// process's page faults) each; and no further, so that the address space
// it commits stays within that of what it uses. Positive control: the
// first region's read-write mappings are found at all.
func TestCommitAhead(t *testing.T) {
	skipRace(t, "a race build's regions are Go memory, committed whole")
	h := newTestHeap(t, Options{})
	r := h.pages.Regions.Load().ByPage[0]
	var held [][]byte
	for i := range 100 {
		held = append(held, h.Alloc(300<<10)) // page runs, one after another
		st := h.Stats()
		// Committed: mapped, and the clean pages an alignment skipped.
		used := uintptr(st.MappedBytes + st.ReleasedBytes)
		rw := rwBytes(t, r.Base, r.Bytes)
		if rw < used {
			t.Fatalf("after %d runs: %d bytes read-write, %d committed", i+1, rw, used)
		}
		if limit := used + max(used/8, pageheap.CommitAhead<<pageShift) + pageheap.OSPageBytes; rw > limit {
			t.Fatalf("after %d runs: %d bytes read-write, more than %d committed and the commit ahead allow (%d)", i+1, rw, used, limit)
		}
		if i == 0 && rw < pageheap.CommitAhead<<pageShift {
			t.Fatalf("after the first run: %d bytes read-write, want the %d of a commit ahead", rw, pageheap.CommitAhead<<pageShift)
		}
	}
	for _, b := range held {
		h.Free(b)
	}
}
