package offheap

import (
	"os"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/pageheap"
)

// skipQemuUser skips a test of what qemu-user does not emulate: the tests
// run under it by hand (.ci/qemu-user.sh sets OFFHEAP_QEMU_USER), and on a
// real arm64 kernel (.ci/vm16k.sh) with the variable unset.
func skipQemuUser(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("OFFHEAP_QEMU_USER") != "" {
		t.Skip("qemu-user: " + why)
	}
}

// hugeHeap is a heap with HugePages whose timers never fire during a test
// (its clock is *now), or a skip where huge pages are off.
func hugeHeap(t *testing.T, now *int64) *Heap {
	t.Helper()
	skipRace(t, "regions are Go memory: HugePages does nothing")
	skipQemuUser(t, "it answers MADV_COLLAPSE with success and makes no huge page")
	if buildChecked {
		t.Skip("checked mode's canaries and quarantine change the layouts these tests set up")
	}
	h := newTestHeap(t, Options{HugePages: true, ProfileBytes: -1, ReleaseDelay: time.Hour})
	h.setClock(func() int64 { return *now })
	if !h.collapseNow() {
		t.Skip("no 2 MiB transparent huge pages on this system")
	}
	return h
}

// hugeBytes is h.HugePageBytes, or a fatal error.
func hugeBytes(t *testing.T, h *Heap) uint64 {
	t.Helper()
	n, err := h.HugePageBytes()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// touch writes a byte of every 4 KiB of b.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
}

// TestHugePagesCollapse: a large block is on huge pages, and a span's
// worth of small blocks, written, is after the collapse pass; a heap
// without HugePages has none (THP's madvise mode: the kernel makes none on
// its own); a range of small runs whose small pages are not all in memory
// is not collapsed, until they are: a later pass collapses it.
// Positive control: with collapseRegion doing nothing, the heap had no
// huge pages and this test failed:
//
//	hugepages_test.go:69: 8 MiB block written and collapsed: 0 bytes on huge pages, want 8 MiB
func TestHugePagesCollapse(t *testing.T) {
	var now int64
	h := hugeHeap(t, &now)
	b := h.Alloc(8 << 20) // the region's first pages: 4 whole ranges
	touch(b)
	h.collapseNow()
	if got := hugeBytes(t, h); got < 8<<20 {
		t.Fatalf("8 MiB block written and collapsed: %d bytes on huge pages, want 8 MiB", got)
	}
	x, y := h.Alloc(1<<20), h.Alloc(1<<20) // one range, half written
	if addrOf(y) != addrOf(x)+1<<20 || addrOf(x)&(2<<20-1) != 0 {
		t.Fatalf("setup: blocks at %#x and %#x do not share one huge page", addrOf(x), addrOf(y))
	}
	touch(x)
	var small [][]byte
	for range 4 << 10 { // 4 MiB of 1 KiB blocks
		s := h.Alloc(1 << 10)
		s[0] = 1
		small = append(small, s)
	}
	h.collapseNow()
	got := hugeBytes(t, h)
	if got < 8<<20+2<<20 {
		t.Fatalf("after 4 MiB of 1 KiB blocks: %d bytes on huge pages, want at least 10 MiB", got)
	}
	ph := &h.pages
	k, _ := ph.PageOf(addrOf(x))
	ph.Mu.Lock()
	_, held := ph.Huge.Held[k]
	_, cand := ph.Huge.Cand[k]
	ph.Mu.Unlock()
	if held || !cand {
		t.Fatalf("the half-written range: held %v, candidate %v; want a candidate, not collapsed", held, cand)
	}
	touch(y) // written whole since: a later pass collapses it
	h.collapseNow()
	if later := hugeBytes(t, h); later < got+2<<20 {
		t.Fatalf("the rest of a range written after the pass: %d bytes on huge pages, want at least %d", later, got+2<<20)
	}
	for _, s := range small {
		h.Free(s)
	}
	h.Free(x)
	h.Free(y)
	h.Free(b)

	plain := newTestHeap(t, Options{ProfileBytes: -1})
	pb := plain.Alloc(8 << 20)
	touch(pb)
	if got := hugeBytes(t, plain); got != 0 {
		t.Logf("a heap without HugePages has %d bytes on huge pages (THP not in madvise mode?)", got)
	}
	plain.Free(pb)
}

// TestHugePagesAtAlloc: a block's whole 2 MiB ranges are on huge pages
// when Alloc returns, before anything touches it and with the background
// pass never run (its clock stands still): they are held, not candidates;
// the part of the block short of a whole range is not collapsed, so the
// heap's memory in the system stays within what it counts as mapped. A
// run of dirty small pages keeps its bytes through the collapse
// (AllocUnzeroed), and Alloc's zeros stay zeros.
// Positive control: without the collapse in allocLarge this test failed:
//
//	hugepages_test.go:135: a 5 MiB block just allocated, untouched: 0 bytes on huge pages, want 4 MiB (its two whole ranges)
func TestHugePagesAtAlloc(t *testing.T) {
	var now int64
	h := hugeHeap(t, &now)
	b := h.Alloc(5 << 20)
	if addrOf(b)&(2<<20-1) != 0 {
		t.Fatalf("setup: a 5 MiB block at %#x, not on a huge page's start", addrOf(b))
	}
	if got := hugeBytes(t, h); got != 4<<20 {
		t.Fatalf("a 5 MiB block just allocated, untouched: %d bytes on huge pages, want 4 MiB (its two whole ranges)", got)
	}
	ph := &h.pages
	first, _ := ph.PageOf(addrOf(b))
	ph.Mu.Lock()
	for k := first; k < first+3*pageheap.HugeSpan; k += pageheap.HugeSpan {
		_, held := ph.Huge.Held[k]
		_, cand := ph.Huge.Cand[k]
		if want := k < first+2*pageheap.HugeSpan; held != want || cand == want {
			t.Errorf("range %d of the block: held %v, candidate %v; want held %v", (k-first)/pageheap.HugeSpan, held, cand, want)
		}
	}
	ph.Mu.Unlock()
	res, err := h.ResidentBytes()
	if m := h.Stats().MappedBytes; err != nil || res > m {
		t.Fatalf("%d bytes resident (%v), more than the %d the heap counts as mapped", res, err, m)
	}
	h.Free(b)
	h.Trim() // every page back: no range held

	// Two 1 MiB blocks fill a range with written small pages; freed, the
	// range is a dirty free run that a 2 MiB block takes whole.
	dirtyRange := func(fill byte) uintptr {
		x, y := h.AllocUnzeroed(1<<20), h.AllocUnzeroed(1<<20)
		if addrOf(y) != addrOf(x)+1<<20 || addrOf(x)&(2<<20-1) != 0 {
			t.Fatalf("setup: blocks at %#x and %#x do not fill one huge page", addrOf(x), addrOf(y))
		}
		for i := range x {
			x[i], y[i] = fill+byte(i), fill-byte(i)
		}
		h.Free(x)
		h.Free(y)
		return addrOf(x)
	}
	before := hugeBytes(t, h)
	at := dirtyRange(0x41)
	u := h.AllocUnzeroed(2 << 20)
	if addrOf(u) != at {
		t.Fatalf("setup: a 2 MiB block at %#x, not on the freed range at %#x", addrOf(u), at)
	}
	if got := hugeBytes(t, h); got != before+2<<20 {
		t.Fatalf("a 2 MiB block of dirty small pages: %d bytes on huge pages, want %d", got, before+2<<20)
	}
	for i := range 1 << 20 {
		if u[i] != 0x41+byte(i) || u[1<<20+i] != 0x41-byte(i) {
			t.Fatalf("AllocUnzeroed's bytes changed by the collapse at %d: %#x, %#x", i, u[i], u[1<<20+i])
		}
	}
	at = dirtyRange(0x61)
	z := h.Alloc(2 << 20)
	if addrOf(z) != at {
		t.Fatalf("setup: a 2 MiB block at %#x, not on the freed range at %#x", addrOf(z), at)
	}
	for i, c := range z {
		if c != 0 {
			t.Fatalf("Alloc's byte %d is %#x after the collapse, want 0", i, c)
		}
	}
	if got := hugeBytes(t, h); got != before+4<<20 {
		t.Fatalf("two 2 MiB blocks of dirty small pages: %d bytes on huge pages, want %d", got, before+4<<20)
	}
	h.Free(u)
	h.Free(z)
}

// TestHugePagesRealloc: a block Realloc grows, in place or onto a new
// run, is on huge pages for its whole 2 MiB ranges when Realloc returns,
// with its bytes. (The move here is of whole ranges: a range that the
// moved pages fill only in part lies across two of the kernel's mappings,
// mremap's and the region's, and no huge page can span them.)
// Positive control: without the collapse in reallocLarge's two paths this
// test failed:
//
//	hugepages_test.go:223: grown in place from 1 to 4 MiB: 0 bytes on huge pages, want 4 MiB
//	hugepages_test.go:245: moved and grown to 8 MiB: 0 bytes on huge pages, want 8 MiB
func TestHugePagesRealloc(t *testing.T) {
	var now int64
	h := hugeHeap(t, &now)
	b := h.Alloc(1 << 20)
	for i := range b {
		b[i] = byte(i * 7)
	}
	a := addrOf(b)
	b = h.Realloc(b, 4<<20)
	if addrOf(b) != a || a&(2<<20-1) != 0 {
		t.Fatalf("setup: grown from %#x to %#x, want in place on a huge page's start", a, addrOf(b))
	}
	if got := hugeBytes(t, h); got != 4<<20 {
		t.Errorf("grown in place from 1 to 4 MiB: %d bytes on huge pages, want 4 MiB", got)
	}
	check := func(b []byte, what string) {
		t.Helper()
		for i, c := range b {
			want := byte(i * 7)
			if i >= 1<<20 {
				want = 0
			}
			if c != want {
				t.Fatalf("%s: byte %d is %#x, want %#x", what, i, c, want)
			}
		}
	}
	check(b, "grown in place")
	fence := h.Alloc(1 << 20) // right after b: b cannot grow in place
	// b's pages move, whole ranges, so they stay whole.
	b = h.Realloc(b, 8<<20)
	if addrOf(b) == a {
		t.Fatalf("setup: grown in place past a fence")
	}
	if got := hugeBytes(t, h); got < 8<<20 {
		t.Errorf("moved and grown to 8 MiB: %d bytes on huge pages, want 8 MiB", got)
	}
	check(b, "moved")
	h.Free(fence)
	h.Free(b)
}

// TestHugePagesReleaseWhole: the release timer gives back a free huge page
// whole and keeps a partly used one whole; Trim breaks it. Positive
// control: with holdsPage true for every held range, the free huge pages
// stayed mapped and this test failed:
//
//	hugepages_test.go:111: after the timer: 8388608 bytes mapped, want 0 (a free huge page goes back)
func TestHugePagesReleaseWhole(t *testing.T) {
	var now int64
	h := hugeHeap(t, &now)
	b := h.Alloc(8 << 20)
	touch(b)
	h.collapseNow()
	h.Free(b)
	now = int64(2 * time.Hour)
	h.fireReleaseTimer()
	if m := h.Stats().MappedBytes; m != 0 {
		t.Fatalf("after the timer: %d bytes mapped, want 0 (a free huge page goes back)", m)
	}
	// Two 1 MiB blocks in one range: one freed.
	x, y := h.Alloc(1<<20), h.Alloc(1<<20)
	if addrOf(y) != addrOf(x)+1<<20 || addrOf(x)&(2<<20-1) != 0 {
		t.Fatalf("setup: blocks at %#x and %#x do not share one huge page", addrOf(x), addrOf(y))
	}
	touch(x)
	touch(y)
	h.collapseNow()
	before := hugeBytes(t, h)
	if before < 2<<20 {
		t.Fatalf("setup: %d bytes on huge pages, want the range's 2 MiB", before)
	}
	h.Free(y)
	now += int64(2 * time.Hour)
	h.fireReleaseTimer()
	if m := h.Stats().MappedBytes; m != 2<<20 {
		t.Fatalf("after the timer: %d bytes mapped, want 2 MiB (a partly used huge page is kept whole)", m)
	}
	if got := hugeBytes(t, h); got != before {
		t.Fatalf("after the timer: %d bytes on huge pages, was %d", got, before)
	}
	h.Trim()
	if m := h.Stats().MappedBytes; m != 1<<20 {
		t.Fatalf("after Trim: %d bytes mapped, want 1 MiB (Trim releases every free page)", m)
	}
	h.Free(x)
}

// TestRegionsHugeAligned: every region's base is 2 MiB aligned, as the
// huge-page ranges assume (hugeRange), the later regions' too.
func TestRegionsHugeAligned(t *testing.T) {
	skipRace(t, "regions are Go memory, aligned to pages only")
	h := newTestHeapFirstRegion(t, Options{ProfileBytes: -1}, 4<<20)
	b := h.Alloc(8 << 20) // past the first region
	for _, r := range h.pages.Regions.Load().ByPage {
		if r.Base&(2<<20-1) != 0 {
			t.Errorf("region at %#x is not 2 MiB aligned", r.Base)
		}
	}
	if h.regionCount() < 2 {
		t.Fatalf("setup: %d regions, want 2 or more", h.regionCount())
	}
	h.Free(b)
}
