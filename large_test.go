package offheap

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/osmem"
)

// TestLargeReallocResident: allocating again a large block the program
// barely touched costs memory in proportion to what it touched, not to the
// block: a 2 GiB block with one byte written, freed and allocated again.
// The memory is the heap's own figure (ResidentBytes, mincore of its
// ranges), which nothing but the test touches, not the process's RSS,
// which the runtime, the race detector and the pagemap move too.
func TestLargeReallocResident(t *testing.T) {
	if buildChecked {
		t.Skip("checked mode poisons a freed block, so every page is touched")
	}
	h := newTestHeap(t, Options{ReleaseDelay: time.Hour}) // its pages stay dirty
	resident := func() int64 {
		t.Helper()
		r, err := h.ResidentBytes()
		if err != nil {
			t.Fatal(err)
		}
		return int64(r)
	}
	const n = min(2<<30, math.MaxInt) // the bound: 32-bit systems compile this, and have no backend
	b := h.Alloc(n)
	b[n/2] = 1
	a := addrOf(b)
	h.Free(b)
	before := resident()
	b = h.Alloc(n)
	grew := resident() - before
	if addrOf(b) != a {
		t.Fatalf("setup: the block came back at %#x, not %#x", addrOf(b), a)
	}
	if b[n/2] != 0 || b[0] != 0 || b[n-1] != 0 {
		t.Fatal("the block is not zeroed")
	}
	t.Logf("Alloc of a dirty 2 GiB block with one byte written: resident %d KiB before, %+d KiB after", before>>10, grew>>10)
	if grew > 8<<20 {
		t.Fatalf("allocating the block again made %d MiB more of the heap resident, want a few at most", grew>>20)
	}
	h.Free(b)
}

// TestZeroPages: zeroPages zeroes every byte, clearing the pages in memory
// and handing back the others, which stay out of memory.
func TestZeroPages(t *testing.T) {
	ps := osmem.PageSize
	for _, n := range []uintptr{64 << 10, zeroResidentMin, 3<<20 + 5000, 40 << 20} {
		span := (n + pageSize - 1) &^ (pageSize - 1)
		p, err := osmem.Map(span)
		if err != nil {
			t.Fatal(err)
		}
		a := uintptr(p)
		touched := func(i uintptr) bool { return i%3 == 0 || i == span/ps-1 }
		for i := uintptr(0); i < span/ps; i++ {
			if touched(i) {
				b := bytesAt(a+i*ps, int(ps))
				for j := range b {
					b[j] = byte(j | 1)
				}
			}
		}
		zeroPages(a, n)
		for i, x := range bytesAt(a, int(n)) {
			if x != 0 {
				t.Fatalf("n=%d: byte %d is %d after zeroPages", n, i, x)
			}
		}
		osmem.Unmap(p, span)
	}
}

// TestZeroPagesUntouched: the pages zeroPages did not find in memory stay
// out of it: the cost in memory follows what was touched.
func TestZeroPagesUntouched(t *testing.T) {
	ps := osmem.PageSize
	const n = 8 << 20
	p, err := osmem.Map(n)
	if err != nil {
		t.Fatal(err)
	}
	defer osmem.Unmap(p, n)
	a := uintptr(p)
	*(*byte)(ptr(a + n/2)) = 1
	zeroPages(a, n)
	vec := make([]byte, n/ps)
	if err := osmem.Resident(p, n, vec); err != nil {
		t.Fatal(err)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	if in > 512 { // at most one huge page's worth, if the system made one
		t.Fatalf("%d of %d pages in memory after zeroPages of a block with one byte written", in, len(vec))
	}
	if *(*byte)(ptr(a + n/2)) != 0 {
		t.Fatal("the written byte is not zeroed")
	}
}

// BenchmarkZeroPages is what sets zeroResidentMin: zeroing a block whose
// pages are all in memory with a plain clear and through mincore (the
// system call is the difference), and through mincore when one byte was
// written since (what a plain clear would fault in whole):
//
//	go test -run '^$' -bench ZeroPages -count 6 .
func BenchmarkZeroPages(b *testing.B) {
	for _, n := range []uintptr{264 << 10, 512 << 10, 1 << 20, 2 << 20, 8 << 20} {
		p, err := osmem.Map(n)
		if err != nil {
			b.Fatal(err)
		}
		a := uintptr(p)
		clear(bytesAt(a, int(n)))
		b.Run(fmt.Sprintf("size=%dKiB/arm=clear", n>>10), func(b *testing.B) {
			for b.Loop() {
				clear(bytesAt(a, int(n)))
			}
		})
		b.Run(fmt.Sprintf("size=%dKiB/arm=mincore", n>>10), func(b *testing.B) {
			for b.Loop() {
				zeroResident(a, n)
			}
		})
		b.Run(fmt.Sprintf("size=%dKiB/arm=mincore-one-byte", n>>10), func(b *testing.B) {
			osmem.Release(p, n)
			for b.Loop() {
				zeroResident(a, n)
				*(*byte)(ptr(a + n/2)) = 1
			}
		})
		osmem.Unmap(p, n)
	}
}

// TestAllocOutOfAddressSpace: an allocation the heap's address space cannot
// grow to hold (one heap spans at most 16 TiB) fails with ErrAddressSpace,
// one of the errors TryAlloc's doc lists, not ErrLimit nor ErrSize, and
// leaves the heap usable.
func TestAllocOutOfAddressSpace(t *testing.T) {
	h := newTestHeap(t, Options{})
	keep := h.Alloc(100)
	if math.MaxInt < 16<<40 {
		t.Skip("ints too small for the sizes")
	}
	for _, n64 := range []uint64{16<<40 - pageSize, 16<<40 - 2*pageSize, 16<<40 - 1<<20} {
		if buildChecked && n64 == 16<<40-pageSize {
			continue // its canary takes it to 16 TiB, which no heap holds: ErrSize
		}
		n := int(n64)
		_, err := h.TryAlloc(n)
		if !errors.Is(err, ErrAddressSpace) || errors.Is(err, ErrLimit) || errors.Is(err, ErrSize) || errors.Is(err, ErrClosed) {
			t.Fatalf("TryAlloc(%d): %v, want ErrAddressSpace", n, err)
		}
		if msg := mustPanic(t, func() { h.Alloc(n) }); !strings.HasPrefix(msg, "offheap: out of address space") {
			t.Fatalf("Alloc(%d) panicked %q", n, msg)
		}
	}
	b := h.Alloc(10 << 20)
	h.Free(b)
	h.Free(keep)
}
