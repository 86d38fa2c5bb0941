package offheap

import (
	"sync"

	"github.com/offheap/offheap/internal/osmem"
)

// The kernel mappings guard pages cost. A guarded run's guard page is an
// inaccessible OS page inside accessible memory: two mappings more in the
// kernel's count from the protection (guardedRun) until the run is made
// accessible again (releaseGuarded, dropSpareRuns), quarantined and spare
// runs included. Linux refuses an mprotect that would take the process
// past vm.max_map_count, and every mmap after it, the Go runtime's and
// other heaps' included. So all heaps of the process together let guard
// pages hold at most half the limit (guardLedger): a guarded run that
// would pass it, or whose guard page the kernel refuses, is left without
// its guard page (unguarded, pageUnguarded in its guard page's word): its
// block keeps its record, stacks and canary, checked at Free, but an
// overrun or a use after free does not fault. guardLedger.skipped counts
// such runs. A sampled heap's pool is not counted: at most
// 2*poolSlots+2 mappings a heap.

// guardLedger is the process's account of the mappings guard pages hold:
// each heap's (pageHeap.guardHeld) and their sum. Under its mu.
var guardLedger struct {
	mu      sync.Mutex
	most    int64  // the most mappings guard pages may hold: half of vm.max_map_count
	held    int64  // mappings guard pages hold now, all heaps
	skipped uint64 // guarded runs left without a guard page, ever
}

func init() { guardLedger.most = int64(osmem.MaxMappings()) / 2 }

const (
	// guardMappings is the mappings a guard page inside accessible memory
	// costs.
	guardMappings = 2
)

// takeGuardMappings reserves the mappings of a guard page of ph's, and
// reports false, reserving nothing, when they would pass the ledger's
// most or ph is closed.
func (ph *pageHeap) takeGuardMappings() bool {
	l := &guardLedger
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held+guardMappings > l.most || ph.guardClosed {
		return false
	}
	l.held += guardMappings
	ph.guardHeld += guardMappings
	return true
}

// giveGuardMappings gives back the mappings of a guard page of ph's made
// accessible again.
func (ph *pageHeap) giveGuardMappings() {
	l := &guardLedger
	l.mu.Lock()
	if !ph.guardClosed {
		l.held -= guardMappings
		ph.guardHeld -= guardMappings
	}
	l.mu.Unlock()
}

// closeGuardMappings gives back every mapping ph's guard pages hold: Close
// unmaps them.
func (ph *pageHeap) closeGuardMappings() {
	l := &guardLedger
	l.mu.Lock()
	l.held -= ph.guardHeld
	ph.guardHeld = 0
	ph.guardClosed = true
	l.mu.Unlock()
}

// leaveUnguarded marks the guarded run at base, which the caller holds, as
// one whose guard page is accessible, like its data pages.
func (ph *pageHeap) leaveUnguarded(base uintptr) {
	ph.mu.Lock()
	markUnguarded(ph.entry(ph.guardPageOf(base)))
	ph.mu.Unlock()
	guardLedger.mu.Lock()
	guardLedger.skipped++
	guardLedger.mu.Unlock()
}

// unguarded reports whether the guarded run at base, which the caller
// holds, has no guard page.
func (ph *pageHeap) unguarded(base uintptr) bool {
	return wordUnguarded(*ph.entry(ph.guardPageOf(base)))
}

// guardPageOf is the first heap page of the guard page of the guarded run
// at base: its last OS page.
func (ph *pageHeap) guardPageOf(base uintptr) uint32 {
	page, _ := ph.pageOf(base)
	return page + wordPages(*ph.entry(page)) - osPagePages
}
