package offheap

import (
	"fmt"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
)

// Blocks above maxSmall are runs of whole pages taken straight from the page
// heap, one page-heap lock per Alloc and per Free. Their first page's word
// holds the run's length, so Free needs no other table.
//
// A run's pages come back from the page heap clean (released, or never
// used: they read as zeros) or dirty (freed lately; they may hold old
// bytes). Free marks every page of a block dirty, touched or not, so a dirty
// page is one that may hold data, not one that does. An Alloc that gets
// dirty pages must zero them, and clearing them all would cost what the
// block spans, not what the program touched: a 2 GiB block with one byte
// written would take 2 GiB of memory to clear. So a block of at least
// zeroResidentMin bytes is zeroed by asking the system which of its pages
// are in memory (mincore): those are cleared, and the others are handed back
// with madvise, which zeroes them whether they were never touched or are
// swapped out. Time and memory follow the pages the program touched. A
// smaller block is cleared whole: one system call costs more than clearing
// it.

// zeroResidentMin is the smallest block zeroed through mincore. Below it a
// clear costs less than the system call, and a clear makes at most this many
// bytes of never-touched pages resident. At it, a block all in memory costs
// little more through mincore than a plain clear, and a block barely
// touched costs half (BenchmarkZeroPages; docs/DESIGN.md).
const zeroResidentMin = 1 << 20

// allocLarge returns the address of a new run of pages for n bytes whose
// pagemap words carry class: pageheap.ClassLarge for a block above maxSmall,
// pageheap.ClassArena for an arena's memory. With zero, its bytes read as
// zeros.
func (h *Heap) allocLarge(n int, zero bool, class uint8) (uintptr, error) {
	np, ok := pagesFor(n)
	if !ok {
		return 0, fmt.Errorf("%w: %d bytes is more than a heap can hold", ErrSize, n)
	}
	a, dirty, err := h.pages.AllocRun(np, 1, class)
	if err != nil {
		return 0, err
	}
	if zero && dirty {
		zeroPages(a, uintptr(n))
	}
	h.pages.CollapseRun(a, np) // HugePages: internal/pageheap/hugepages.go
	return a, nil
}

// zeroPages makes the n bytes at a, the start of a page run of this
// caller's, read as zeros, at a cost in proportion to the pages in memory.
func zeroPages(a, n uintptr) {
	if n < zeroResidentMin {
		clear(bytesAt(a, int(n)))
		return
	}
	zeroResident(a, n)
}

// zeroResident is zeroPages through mincore, whatever the size. It hands
// back only the system pages that lie whole in the run's pages (up to a+n
// rounded up to a heap page): an OS page larger than a heap page may hold
// a neighbour's bytes too, and the block's bytes in one are
// cleared.
func zeroResident(a, n uintptr) {
	ps := osmem.PageSize
	lo, hi := pageheap.AlignUp(a, ps), pageheap.AlignUp(a+n, pageSize)&^(ps-1)
	if hi <= lo {
		clear(bytesAt(a, int(n)))
		return
	}
	clear(bytesAt(a, int(lo-a)))
	end := a + n
	if end > hi {
		clear(bytesAt(hi, int(end-hi)))
		end = hi
	}
	a = lo
	// [start, x) is a stretch of system pages all in memory (res) or all
	// not; flush clears the first kind and hands the second back.
	start, res := a, false
	flush := func(to uintptr) {
		if to > start && (res || osmem.Release(ptr(start), to-start) != nil) {
			clear(bytesAt(start, int(to-start))) // in memory, or madvise refused
		}
	}
	var vec [4096]byte // one mincore call covers len(vec) system pages
	for x := a; x < end; {
		m := min(end-x, uintptr(len(vec))*ps)
		if osmem.Resident(ptr(x), m, vec[:]) != nil {
			for i := range vec {
				vec[i] = 1 // unknown: clear, which is right whatever the page holds
			}
		}
		for i := uintptr(0); i < m; i += ps {
			if r := vec[i/ps]&1 != 0; r != res {
				flush(x + i)
				start, res = x+i, r
			}
		}
		x += m
	}
	if !res {
		end = pageheap.AlignUp(end, ps) // madvise whole system pages: the run's own, at most hi
	}
	flush(end)
}

// freeLarge frees the run of class that starts at a (see allocLarge), or
// panics if a is not the start of one.
func (h *Heap) freeLarge(a uintptr, class uint8) {
	if !h.pages.FreeRun(a, class) {
		panic(fmt.Sprintf("offheap: Free of %#x, which is not the start of a block: it is inside a large block", a))
	}
}
