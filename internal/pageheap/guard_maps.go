package pageheap

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

// GuardLedger is the process's account of the mappings guard pages hold:
// each heap's (Heap.guardHeld) and their sum. Under its Mu.
var GuardLedger struct {
	Mu      sync.Mutex // guards the rest
	Most    int64      // the most mappings guard pages may hold: half of vm.max_map_count
	Held    int64      // mappings guard pages hold now, all heaps
	Skipped uint64     // guarded runs left without a guard page, ever
}

func init() { GuardLedger.Most = int64(osmem.MaxMappings()) / 2 }

const (
	// GuardMappings is the mappings a guard page inside accessible memory
	// costs.
	GuardMappings = 2
)

// TakeGuardMappings reserves the mappings of a guard page of ph's, and
// reports false, reserving nothing, when they would pass the ledger's
// most or ph is closed.
func (ph *Heap) TakeGuardMappings() bool {
	l := &GuardLedger
	l.Mu.Lock()
	defer l.Mu.Unlock()
	if l.Held+GuardMappings > l.Most || ph.guardClosed {
		return false
	}
	l.Held += GuardMappings
	ph.guardHeld += GuardMappings
	return true
}

// GiveGuardMappings gives back the mappings of a guard page of ph's made
// accessible again.
func (ph *Heap) GiveGuardMappings() {
	l := &GuardLedger
	l.Mu.Lock()
	if !ph.guardClosed {
		l.Held -= GuardMappings
		ph.guardHeld -= GuardMappings
	}
	l.Mu.Unlock()
}

// closeGuardMappings gives back every mapping ph's guard pages hold: Close
// unmaps them.
func (ph *Heap) closeGuardMappings() {
	l := &GuardLedger
	l.Mu.Lock()
	l.Held -= ph.guardHeld
	ph.guardHeld = 0
	ph.guardClosed = true
	l.Mu.Unlock()
}

// LeaveUnguarded marks the guarded run at base, which the caller holds, as
// one whose guard page is accessible, like its data pages.
func (ph *Heap) LeaveUnguarded(base uintptr) {
	ph.Mu.Lock()
	markUnguarded(ph.Entry(ph.guardPageOf(base)))
	ph.Mu.Unlock()
	GuardLedger.Mu.Lock()
	GuardLedger.Skipped++
	GuardLedger.Mu.Unlock()
}

// Unguarded reports whether the guarded run at base, which the caller
// holds, has no guard page.
func (ph *Heap) Unguarded(base uintptr) bool {
	return wordUnguarded(*ph.Entry(ph.guardPageOf(base)))
}

// guardPageOf is the first heap page of the guard page of the guarded run
// at base: its last OS page.
func (ph *Heap) guardPageOf(base uintptr) uint32 {
	page, _ := ph.PageOf(base)
	return page + WordPages(*ph.Entry(page)) - OSPagePages
}
