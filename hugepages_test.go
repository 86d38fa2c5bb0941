package offheap

import (
	"os"
	"testing"
	"time"
)

// skipQemuUser skips a test of what qemu-user does not emulate: the tests
// run under it in CI (.ci/qemu-user.sh sets OFFHEAP_QEMU_USER), and on a
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
	h := newTestHeap(t, Options{HugePages: true, ProfileRate: -1, ReleaseDelay: time.Hour})
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

// TestHugePagesCollapse: a large block and a span's worth of small ones,
// written, are on huge pages after the collapse pass; a heap without
// HugePages has none (THP's madvise mode: the kernel makes none on its
// own), and neither has a range whose small pages are not all in memory,
// until they are: a later pass collapses it.
// Positive control: with collapseRegion doing nothing, the heap had no
// huge pages and this test failed:
//
//	hugepages_test.go:57: 8 MiB block written and collapsed: 0 bytes on huge pages, want 8 MiB
func TestHugePagesCollapse(t *testing.T) {
	var now int64
	h := hugeHeap(t, &now)
	b := h.Alloc(8 << 20) // the region's first pages: 4 whole ranges
	touch(b)
	h.collapseNow()
	if got := hugeBytes(t, h); got < 8<<20 {
		t.Fatalf("8 MiB block written and collapsed: %d bytes on huge pages, want 8 MiB", got)
	}
	sparse := h.Alloc(4 << 20) // 2 ranges, half written
	touch(sparse[:3<<20])
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
	if got >= 16<<20 {
		t.Fatalf("%d bytes on huge pages: the half-written block's second range collapsed too", got)
	}
	touch(sparse) // written whole since: a later pass collapses its last range
	h.collapseNow()
	if later := hugeBytes(t, h); later < got+2<<20 {
		t.Fatalf("the rest of a block written after the pass: %d bytes on huge pages, want at least %d", later, got+2<<20)
	}
	for _, s := range small {
		h.Free(s)
	}
	h.Free(sparse)
	h.Free(b)

	plain := newTestHeap(t, Options{ProfileRate: -1})
	pb := plain.Alloc(8 << 20)
	touch(pb)
	if got := hugeBytes(t, plain); got != 0 {
		t.Logf("a heap without HugePages has %d bytes on huge pages (THP not in madvise mode?)", got)
	}
	plain.Free(pb)
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
	h := newTestHeapFirstRegion(t, Options{ProfileRate: -1}, 4<<20)
	b := h.Alloc(8 << 20) // past the first region
	for _, r := range h.pages.regions.Load().byPage {
		if r.base&(2<<20-1) != 0 {
			t.Errorf("region at %#x is not 2 MiB aligned", r.base)
		}
	}
	if h.regionCount() < 2 {
		t.Fatalf("setup: %d regions, want 2 or more", h.regionCount())
	}
	h.Free(b)
}
