//go:build linux

// The touch pattern needs madvise(MADV_NOHUGEPAGE): Linux.

package offheap

import (
	"errors"
	"testing"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
	"golang.org/x/sys/unix"
)

// TestResidentBytes touches a known pattern of a large block's pages and
// checks that ResidentBytes grows by exactly what the kernel reports
// resident in the block's own pages (mincore of its range, taken apart
// from the heap's), at least the pages touched, while MappedBytes counts
// the whole block from its Alloc. Nothing but the test touches the heap's
// ranges, so the two readings agree whatever the kernel makes resident
// around a touch (a huge page, where MADV_NOHUGEPAGE is not followed, as
// under qemu-user).
func TestResidentBytes(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode writes every block it hands out: no page stays untouched")
	}
	h := newTestHeap(t, Options{ReleaseDelay: -1})
	resident := func() uint64 {
		t.Helper()
		r, err := h.ResidentBytes()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := resident(); r != 0 {
		t.Errorf("a new heap: ResidentBytes = %d, want 0", r)
	}
	const size = 64 << 20
	b := h.Alloc(size)
	// Transparent huge pages would make a touch resident 2 MiB at a time:
	// the pattern below is for base pages.
	if err := unix.Madvise(b, unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	ps := osmem.PageSize
	lo, hi := addrOf(b)&^(ps-1), pageheap.AlignUp(addrOf(b)+size, ps)
	kernel := func() uint64 { // the block's OS pages in memory, by mincore
		t.Helper()
		r, err := osmem.ResidentBytes(ptr(lo), hi-lo)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	before, kernelBefore := resident(), kernel()
	if m := h.Stats().MappedBytes; m < size {
		t.Errorf("MappedBytes = %d after an Alloc of %d", m, size)
	}
	if before > size/64 {
		t.Errorf("ResidentBytes = %d after an Alloc of %d that nothing touched, want about 0", before, size)
	}
	// Every fourth OS page of the first half.
	touched := 0
	for off := 0; off < size/2; off += 4 * int(ps) {
		b[off] = 1
		touched += int(ps)
	}
	got, want := resident()-before, kernel()-kernelBefore
	if got != want || got < uint64(touched) {
		t.Errorf("ResidentBytes grew by %d after touching %d pages of %d bytes (%d bytes); the kernel reports %d more of the block resident", got, touched/int(ps), ps, touched, want)
	}
	if got != uint64(touched) {
		t.Logf("the kernel made %d bytes resident for %d touched", want, touched)
	}
	if m := h.Stats().MappedBytes; m < size {
		t.Errorf("MappedBytes = %d, want at least the block's %d whatever is touched", m, size)
	}
	h.Free(b)
	h.Trim()
	if r := resident(); r > before {
		t.Errorf("ResidentBytes = %d after Free and Trim, want at most %d as before the touches", r, before)
	}
	h.Close()
	if _, err := h.ResidentBytes(); !errors.Is(err, ErrClosed) {
		t.Errorf("ResidentBytes of a closed heap: err %v, want ErrClosed", err)
	}
}

// BenchmarkResidentBytes is the cost of ResidentBytes per GiB of committed
// address space, untouched (the kernel walks the page tables whatever they
// hold).
func BenchmarkResidentBytes(b *testing.B) {
	h := newTestHeap(b, Options{})
	h.Alloc(1 << 30)
	for b.Loop() {
		if _, err := h.ResidentBytes(); err != nil {
			b.Fatal(err)
		}
	}
}
