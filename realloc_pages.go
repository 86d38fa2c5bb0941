package offheap

import (
	"errors"
	"fmt"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
)

// Realloc of a large block (more than maxSmall bytes) works on its page run
// rather than on its bytes:
//
//   - A shorter run is cut in place, and the pages past its new end go back
//     to the system at once, not after ReleaseDelay: a program shrinks a
//     block to have the memory back. The release timer gives them back,
//     fired for them (releaseSoon): the madvise of many resident pages
//     costs more than AllocUnzeroed + copy + Free of what the block keeps.
//   - A longer run grows in place when the pages right after it are free,
//     or are the current region's frontier.
//   - Otherwise the block moves to a new run, and the pages that hold its
//     bytes move with it: mremap changes the page tables (pageheap.MovePages) and no
//     byte is copied, so a move costs page-table work, not a copy, and adds
//     no resident memory. The old run's moved pages hold nothing afterwards
//     (the kernel gives them back) and go to the free set clean; the old
//     address range stays mapped, so the heap's address space keeps no hole
//     another mapping could take. Below moveMin, onto a new run whose pages
//     are in memory already (moveOnto: a copy costs less there), where the
//     heap has no room for another moved range among the kernel's mappings
//     (ClaimMove, internal/pageheap/mappings.go), and wherever the kernel refuses the move or
//     the regions are Go memory (race builds), the bytes are copied.
//
// Only the bytes Realloc must zero are cleared: those past len(b) that the
// old block held, and the new pages that may hold old bytes (through
// mincore, as Alloc's, for what is large: large.go); pages the page heap
// has clean (released, or never used) read as zeros already and are not
// touched. ReallocUnzeroed clears nothing. The profile draws for the new
// size as for an Alloc of it: a sampled result is a pageheap.ClassSampled run
// with a record of its own, and a block the guard pages sample moves to the
// checker by a copy. A checked heap does none of this: its blocks are the
// checker's, and Realloc copies them so that a stale use of the old block
// is caught.

// moveMin is the least a move takes to be done with mremap rather than a
// copy: below it the system call and the TLB shootdown cost more than the
// copy (BenchmarkReallocMove; docs/DESIGN.md).
const moveMin = 256 << 10

// reallocLarge is Realloc (ReallocUnzeroed without zero) for an n >
// maxSmall of a heap that is not checked, between enter and exit, once
// freeable took b; old and onp are its run's class and pages (0 for a
// small or guarded block).
func (h *Heap) reallocLarge(b []byte, n int, zero bool, old uint8, onp uint32) []byte {
	a := addrOf(b)
	np, ok := pagesFor(n)
	if !ok {
		panic(fmt.Errorf("%w: %d bytes is more than a heap can hold", ErrSize, n))
	}
	guard, prof := h.sampleDue(n, 0)
	var st stackID
	if guard || prof {
		var s stack // the heap's own frames are dropped when it is printed
		st = callstack.Intern(&s, s.Fill(callstack.Walk(&s.PCs)))
	}
	if guard {
		return h.reallocGuarded(b, n, zero, st)
	}
	class := uint8(pageheap.ClassLarge)
	if prof {
		class = pageheap.ClassSampled
	}
	k := min(len(b), n)
	if old != 0 {
		k = min(k, int(onp)<<pageShift)
	}
	if old != 0 && (np <= onp || h.pages.MayExtend(a, onp)) {
		if dirty, ok := h.pages.ResizeRun(a, old, class, np); ok {
			if old == pageheap.ClassSampled {
				h.prof.release(a)
			}
			if zero {
				oldEnd := min(int(onp)<<pageShift, n)
				zeroRange(a, k, oldEnd) // what the block held past len(b)
				if dirty {
					zeroRange(a, oldEnd, n)
				}
			}
			if prof {
				h.prof.record(a, roundedSize(n), st, kindHeap)
			}
			h.pages.CollapseRun(a, np) // HugePages: internal/pageheap/hugepages.go
			return bytesAt(a, n)
		}
	}
	na, dirty := h.allocPages(n, np, class)
	moved := 0
	// The pages that hold b's bytes, in whole OS pages of b's own (an OS
	// page larger than a heap page may hold a neighbour's bytes: internal/pageheap/ospage.go).
	mp := int(pageheap.AlignUp(uintptr(k), pageheap.OSPageBytes))
	if old != 0 && mp >= moveMin && mp <= int(uintptr(onp)<<pageShift&^(pageheap.OSPageBytes-1)) && moveOnto(na, mp, dirty) &&
		h.pages.ClaimMove(na, a, uintptr(mp)) { // room among the kernel's mappings
		switch err := pageheap.MovePages(ptr(na), ptr(a), uintptr(mp)); {
		case err == nil:
			moved = mp
		case errors.Is(err, osmem.ErrLost):
			// The new run's address range is another mapping's now: its
			// pages stay allocated, never used, and the block moves to
			// another run. (b is as it was.)
			return h.reallocLarge(b, n, zero, old, onp)
		}
	}
	nb := bytesAt(na, n)
	if moved == 0 {
		copy(nb, b[:k])
	}
	if zero {
		clear(nb[k:min(max(k, moved), n)]) // the moved pages' bytes past len(b)
		if dirty {
			zeroRange(na, max(k, moved), n)
		}
	}
	if prof {
		h.prof.record(na, roundedSize(n), st, kindHeap)
	}
	h.pages.CollapseRun(na, np)
	if old == 0 { // a small block, or no block of this heap at all
		h.freeOld(b, nb)
		return nb
	}
	if old == pageheap.ClassSampled {
		h.prof.release(a)
	}
	h.pages.FreeMoved(a, uint32(moved>>pageShift))
	return nb
}

// moveOnto reports whether mp bytes, at least moveMin, are to move onto the
// new run at na rather than be copied there. A move frees each page of the
// new run that is in memory before it moves one in (about 1 us a page on
// this VM, against 0.2 for a copy onto it), where a copy onto a page not in
// memory faults it in first (2 us and more, against 0.15 for a move). So
// the pages move onto a clean run (none in memory) and are copied onto a
// dirty one (freed lately, so most likely in memory) of less than
// probeMin bytes, as the hand-written AllocUnzeroed + copy + Free would
// copy them; onto a dirty run of probeMin or more, mincore tells, from the
// first probeBytes of the run (a fraction of a percent of the copy it may
// save). BenchmarkReallocPairs; docs/DESIGN.md.
func moveOnto(na uintptr, mp int, dirty bool) bool {
	if !dirty {
		return true
	}
	if mp < probeMin {
		return false
	}
	r, err := osmem.ResidentBytes(ptr(na), probeBytes)
	return err == nil && r < probeBytes-probeBytes/8
}

const (
	probeMin   = 4 << 20
	probeBytes = 256 << 10
)

// reallocGuarded is Realloc to a new block on guard pages, for a heap whose
// GuardOneIn drew this one: the checker's, as Alloc's sample would be.
func (h *Heap) reallocGuarded(b []byte, n int, zero bool, st stackID) []byte {
	nb, err := h.checkAlloc(n, false, st)
	if err != nil {
		panic(err)
	}
	k := copy(nb, b)
	if zero {
		clear(nb[k:])
	}
	h.freeOld(b, nb)
	return nb
}

// freeOld frees b once its bytes are in nb, the block Realloc returns; if b
// is no block of this heap, Free panics and nb goes back.
func (h *Heap) freeOld(b, nb []byte) {
	freed := false
	defer func() {
		if !freed {
			h.Free(nb)
		}
	}()
	h.Free(b)
	freed = true
}

// allocPages takes a run of np pages of class for a block of n bytes, trying
// again once the heap gets back what it keeps at the Limit, as Alloc does,
// and reports whether its pages may hold old bytes. It panics as Alloc does.
func (h *Heap) allocPages(n int, np uint32, class uint8) (uintptr, bool) {
	var rc reclaimTry
	for {
		a, dirty, err := h.pages.AllocRun(np, 1, class) // a run of an OS page or more starts on one
		if err == nil {
			return a, dirty
		}
		if !rc.again(h, n, err) {
			panic(err)
		}
	}
}

// zeroRange makes bytes [from, to) of the page run at a read as zeros,
// clearing the part of a page at from and handing the whole pages after it
// to zeroPages, whose cost follows the pages in memory.
func zeroRange(a uintptr, from, to int) {
	if from >= to {
		return
	}
	edge := min((from+pageSize-1)&^(pageSize-1), to)
	clear(bytesAt(a+uintptr(from), edge-from))
	if to > edge {
		zeroPages(a+uintptr(edge), uintptr(to-edge))
	}
}
