package pageheap

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offheap/offheap/internal/osmem"
)

// Transparent huge pages (Options.HugePages). Memory is put on 2 MiB huge
// pages in two ways, both with MADV_COLLAPSE (Linux 6.1), neither by
// marking the heap's mappings MADV_HUGEPAGE, which would split them and let
// the kernel fault in (and khugepaged fill in) whole huge pages where the
// heap counts a few small pages as mapped.
//
// A run allocated for a block (allocLarge), or grown or moved for one by
// Realloc (reallocLarge), has its whole huge-page ranges collapsed before
// Alloc or Realloc returns (collapseRun): the run is allocated whole,
// so its huge pages hold no memory the heap does not count already, and
// the block is on huge pages before the program first touches it; the
// allocating goroutine pays for it, a few ms per range, in place of the
// faults of 512 small pages it would take on its first touch. A range of
// smaller runs (spans, blocks under 2 MiB) is faulted in as small pages and
// collapsed by a background pass (collapsePass, on a timer as the release
// of free pages is) once all of its small pages are in memory (mincore: so
// the huge page costs no memory the small ones did not). The copy and any
// compaction are the pass's, off every allocating goroutine (though not
// off their faults: below).
//
// Ranges are the huge-page-aligned stretches of hugeSpan pages of a region,
// whose base is aligned for them (mapRegion); a region's partial last
// stretch is never one. A range collapsed and not broken since is held.
// The page heap keeps held ranges whole: the release timer gives back a
// held range's free pages only once the whole range is free, and then all
// of it, so a huge page goes back whole; Trim and the Limit release every
// free page, breaking held ranges where they must (releaseRun). A release
// of any page of a range ends its hold. Spans and runs are placed to fill
// the ranges already in use before they start new ones.
//
// A range not yet dense when the pass looks at it stays a candidate while
// any of its pages is allocated: the program may be writing it still. The
// pass waits for a lull: it runs collapseQuiet after the last allocation
// that touched a new range, or collapseMaxWait after its first, whichever
// comes first. MADV_COLLAPSE copies the 2 MiB with the process's mmap lock
// held for writing, so every page fault of the process waits for the
// collapse in progress (a few ms); the pass rests collapseRest times as long
// as each collapse took before the next, so that it takes at most a fifth
// of one CPU and of the faults' time.
//
// A collapse by the pass runs without the page heap's lock, which
// allocations need: a page released between the pass's mincore and its
// collapse is made resident again by the collapse (zero-filled, as the
// heap expects of it), so the heap's count of mapped memory can fall short
// of the truth by up to a huge page per such race, until the range's next
// release; the range is then not held (huge.broken), so its pages go back
// as usual. collapseRun's ranges are allocated, so nothing releases them
// meanwhile.

// The collapse pass's timing (above).
const (
	collapseQuiet   = 200 * time.Millisecond
	collapseMaxWait = 2 * time.Second
	collapseRetry   = time.Second // the next pass over candidates not yet dense
	collapseRest    = 4
)

// noRange is no range's first page: virtual pages are below 1<<31.
const noRange = ^uint32(0)

// hugeState is the page heap's record of huge pages. Guarded by Heap.Mu
// except mu.
type hugeState struct {
	On     bool                // Options.HugePages
	Cand   map[uint32]struct{} // ranges (first page) allocations touched since the last pass
	Held   map[uint32]struct{} // ranges collapsed and whole since
	Timer  *time.Timer         // the pending collapse pass; nil when none
	First  int64               // by the clock: the first allocation noted since the last pass, or -1
	last   int64               // the last allocation noted
	busy   uint32              // the range being collapsed, or noRange
	broken bool                // a page of busy was released during its collapse
	Fill   hugeFill            // allocated pages by range, for placement
	// mu is held across each collapse, so that close can wait out the one
	// in progress before the regions are unmapped.
	mu sync.Mutex
}

// initHuge turns huge pages on, where the system has 2 MiB ones and
// regions are the system's memory.
func (ph *Heap) initHuge() {
	if osmem.HugePageSize != 2<<20 || !regionsCollapse {
		return
	}
	ph.Huge.On = true
	ph.Huge.Cand = make(map[uint32]struct{})
	ph.Huge.Held = make(map[uint32]struct{})
	ph.Huge.Fill.At = make(map[uint32]fillSlot)
	ph.Huge.busy = noRange
	ph.Huge.First = -1
}

// noteAlloc records that the n pages at first were allocated: they count
// in their ranges' fill, and their ranges are looked at by the next
// collapse pass. Called with Mu held.
func (ph *Heap) noteAlloc(first, n uint32) {
	if !ph.Huge.On {
		return
	}
	ph.fillCount(first, n, true)
	r := ph.region(first)
	added := false
	for p := first; p < first+n; p = (p-r.First+HugeSpan)&^(HugeSpan-1) + r.First {
		if k, ok := HugeRange(r, p); ok {
			_, held := ph.Huge.Held[k]
			_, known := ph.Huge.Cand[k]
			if !held && !known {
				ph.Huge.Cand[k] = struct{}{}
				added = true
			}
		}
	}
	if !added || ph.closed {
		return
	}
	now := ph.Clock()
	if ph.Huge.First < 0 {
		ph.Huge.First = now
	}
	ph.Huge.last = now
	if ph.Huge.Timer == nil {
		ph.Huge.Timer = time.AfterFunc(collapseQuiet, ph.CollapsePass)
	}
}

// noteFree records that the n pages at first, allocated, are free again.
// Called with Mu held.
func (ph *Heap) noteFree(first, n uint32) {
	if ph.Huge.On {
		ph.fillCount(first, n, false)
	}
}

// noteRelease ends the hold of every range with a page in the n pages at
// first, which were just given back to the system. Called with Mu held.
func (ph *Heap) noteRelease(first, n uint32) {
	if !ph.Huge.On {
		return
	}
	r := ph.region(first)
	for p := first; p < first+n; p = (p-r.First+HugeSpan)&^(HugeSpan-1) + r.First {
		k, _ := HugeRange(r, p)
		delete(ph.Huge.Held, k)
		if k == ph.Huge.busy {
			ph.Huge.broken = true
		}
	}
}

// holdsPage reports whether the release timer must keep free page p of the
// free run of n pages at first: p's range is held and the run does not
// cover all of it. Called with Mu held, for huge pages on.
func (ph *Heap) holdsPage(r *region, first, n, p uint32) bool {
	k, ok := HugeRange(r, p)
	if !ok {
		return false
	}
	if _, held := ph.Huge.Held[k]; !held {
		return false
	}
	return k < first || k+HugeSpan > first+n
}

// CollapsePass collapses the candidate ranges whose small pages are all
// in memory, one at a time, once allocations pause (above), and keeps the
// others that still hold allocated pages for a later pass.
func (ph *Heap) CollapsePass() {
	ph.Mu.Lock()
	ph.Huge.Timer = nil
	if ph.closed {
		ph.Mu.Unlock()
		return
	}
	now := ph.Clock()
	if ph.Huge.First >= 0 {
		quiet := ph.Huge.last + int64(collapseQuiet)
		if most := ph.Huge.First + int64(collapseMaxWait); now < min(quiet, most) {
			ph.Huge.Timer = time.AfterFunc(time.Duration(min(quiet, most)-now), ph.CollapsePass)
			ph.Mu.Unlock()
			return
		}
	}
	ph.Huge.First = -1
	keys := make([]uint32, 0, len(ph.Huge.Cand))
	for k := range ph.Huge.Cand {
		keys = append(keys, k)
	}
	ph.Mu.Unlock()
	slices.Sort(keys)
	vec := make([]byte, (2<<20)/osmem.PageSize)
	for _, k := range keys {
		t0 := time.Now()
		done, collapsed := ph.collapse(k, vec)
		if done {
			return
		}
		if collapsed {
			time.Sleep(collapseRest * time.Since(t0))
		}
	}
	ph.Mu.Lock()
	if len(ph.Huge.Cand) > 0 && ph.Huge.Timer == nil && !ph.closed {
		ph.Huge.Timer = time.AfterFunc(collapseRetry, ph.CollapsePass)
	}
	ph.Mu.Unlock()
}

// collapse collapses candidate range k if its small pages are all in
// memory, and drops it from the candidates if it did, or if none of its
// pages is allocated. It reports whether the heap is closed, and whether it
// collapsed the range.
func (ph *Heap) collapse(k uint32, vec []byte) (closed, collapsed bool) {
	ph.Huge.mu.Lock()
	defer ph.Huge.mu.Unlock()
	ph.Mu.Lock()
	if ph.closed {
		ph.Mu.Unlock()
		return true, false
	}
	if _, ok := ph.Huge.Cand[k]; !ok { // taken by collapseRun since the pass began
		ph.Mu.Unlock()
		return false, false
	}
	if !ph.inUseIn(k) {
		delete(ph.Huge.Cand, k)
		ph.Mu.Unlock()
		return false, false
	}
	a := ptr(ph.Addr(k))
	ph.Huge.busy, ph.Huge.broken = k, false
	ph.Mu.Unlock()
	ok := osmem.Resident(a, 2<<20, vec) == nil
	for _, v := range vec {
		ok = ok && v&1 != 0
	}
	collapsed = ok && collapseRegion(a, 2<<20) == nil
	ph.Mu.Lock()
	if collapsed {
		delete(ph.Huge.Cand, k)
		if !ph.Huge.broken {
			ph.Huge.Held[k] = struct{}{}
		}
	}
	ph.Huge.busy = noRange
	ph.Mu.Unlock()
	return false, collapsed
}

// CollapseRun puts the whole ranges of the run of np pages at a, a block
// being allocated or reallocated, on huge pages now: the run is allocated
// whole, so a huge page there holds no memory the heap does not count as
// mapped already. Ranges already held are left as they are; a range the
// kernel refuses stays a candidate of the background pass. (The kernel
// answers success and makes no huge page for a range that lies across two
// of its mappings, as a Realloc's page move can leave one: that range is
// held, on small pages, until its next release.) Called by the allocating
// goroutine, without Mu: the collapse takes milliseconds a range, and no
// other goroutine touches the run's pages meanwhile (the release timer and
// Trim release free pages only).
func (ph *Heap) CollapseRun(a uintptr, np uint32) {
	if !ph.Huge.On || np < HugeSpan {
		return
	}
	lo, hi := AlignUp(a, 2<<20), (a+uintptr(np)<<PageShift)&^(2<<20-1)
	if hi <= lo {
		return
	}
	first, _ := ph.PageOf(lo)
	end := first + uint32((hi-lo)>>PageShift)
	var todo []uint32
	ph.Mu.Lock()
	for k := first; k < end; k += HugeSpan {
		if _, held := ph.Huge.Held[k]; !held {
			delete(ph.Huge.Cand, k) // this goroutine's, not the pass's
			todo = append(todo, k)
		}
	}
	ph.Mu.Unlock()
	ok := todo[:0]
	var failed []uint32
	for _, k := range todo {
		p := ptr(lo + uintptr(k-first)<<PageShift)
		// A write that keeps the word (the caller's bytes, zero or not):
		// MADV_COLLAPSE refuses a range with no page table yet, and a
		// fault makes one. The rest of the range needs no fault: the
		// collapse fills the pages not in memory with zeros, which they
		// read as already.
		atomic.AddUint32((*uint32)(p), 0)
		if collapseRegion(p, 2<<20) == nil {
			ok = append(ok, k)
		} else {
			failed = append(failed, k)
		}
	}
	ph.Mu.Lock()
	for _, k := range ok {
		ph.Huge.Held[k] = struct{}{}
	}
	for _, k := range failed {
		ph.Huge.Cand[k] = struct{}{}
	}
	if len(failed) > 0 && ph.Huge.Timer == nil && !ph.closed {
		ph.Huge.Timer = time.AfterFunc(collapseRetry, ph.CollapsePass)
	}
	ph.Mu.Unlock()
}

// inUseIn reports whether any page of range k is allocated. Called with Mu
// held.
func (ph *Heap) inUseIn(k uint32) bool {
	for p := k; p < k+HugeSpan; p++ {
		if WordClass(*ph.Entry(p)) != 0 {
			return true
		}
	}
	return false
}

// closeHuge stops the collapse pass and waits out a collapse in progress.
// Called by close, after closed is set, without Mu.
func (ph *Heap) closeHuge() {
	ph.Mu.Lock()
	if ph.Huge.Timer != nil {
		ph.Huge.Timer.Stop()
		ph.Huge.Timer = nil
	}
	ph.Mu.Unlock()
	ph.Huge.mu.Lock()
	ph.Huge.mu.Unlock() //lint:ignore SA2001 the critical section is empty on purpose: it waits out a collapse
}
