package offheap

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// Closing a heap that other goroutines still use.
//
// Close must not run concurrently with other calls on the heap, but a
// program that breaks the rule gets ErrClosed from the calls that meet the
// closed or closing heap, never a hang or a fault inside offheap. Close
// unmaps the heap's memory, so every access offheap makes to it (blocks,
// the pagemap and span array, magazines, an arena's per-P array, a checked
// heap's records and rings) is made in one of four ways, each of which Close
// waits out before it unmaps:
//
//  1. Pinned, with a per-P structure in service: a magazine from h.mags
//     (which a checked heap's checker uses too), a checked heap's quarantine
//     ring, an arena's per-P array from a.procs, loaded inside the pinned
//     section. The fast paths. Close takes every such structure out of
//     service, under the lock that installs it (which refuses to install on
//     a closed heap: perP), then quiesces: a pinned section
//     that began before cannot outlast the stop of the world, and one that
//     begins after finds nothing in service.
//  2. Pinned, having seen the heap open inside the pinned section (h.closed
//     false): the section began before Close marked the heap closed, so
//     before Close quiesced. Short accesses off the fast paths: zeroing a
//     refilled block, Realloc of a small block (in place, or moved through
//     the magazine, a copy of at most maxSmall bytes: reallocSmall), a
//     Shared's slow count operations, a checked heap's small-block Alloc
//     and Free.
//     Free and Shared.Retain and Release do the same without the pin: they
//     are go:nosplit, which leaves them no safe point but their calls, so
//     the stop of the world waits for them as for a pinned section. Free
//     sees the heap open in fastSize, which Close zeroes first;
//     Retain and Release in h.closed (Plain handles). A Local's
//     Alloc, AllocUnzeroed and Free too, in fastSize, before they touch
//     the Local's stacks, which Close unmaps with the rest; and
//     Relocate's dense check, in fastSize.
//  3. Under a central list's lock, having seen h.closed false under it: the
//     central lists (central.get) and the spans and page-heap operations
//     they reach. Close takes every central lock after it waits out the
//     rest. The page heap's own lock and closed flag guard its timer.
//  4. Between h.enter and h.exit: everything long or rare (large blocks,
//     checked mode's other paths and its runs' quarantine ring, arenas'
//     slow paths, Trim, Lookup, the double-free check). enter, pinned,
//     fails once the heap is closed, and otherwise counts the
//     operation on the P it runs on; exit uncounts it on whichever P it runs
//     on then, so a P's count may go negative, but the sum over the Ps is
//     the number of operations in progress. Close marks the heap closed
//     before it quiesces, so once the quiesce returns every enter that found
//     the heap open has counted itself and no count rises again: each count
//     only falls, a pass that reads the counts one by one reads each at or
//     above its value at the end of the pass, and a pass that sums to 0
//     proves that no operation is in progress then or later. Close repeats
//     the pass until one does.
//
// Close's order: mark closed; take the per-P structures out of service and
// zero fastSize; quiesce; wait for the counts; take each central lock; let the
// checker report; save the magazines' and Locals' census; mark the page heap
// closed under its lock; unmap. No pinned section takes a lock, and code
// between enter and exit must not wait for anything Close holds while it waits
// (closeMu), nor run the program's code: an OnLastRelease callback may call
// Close, so callbacks run outside. Every exit is deferred, so a panic inside
// does not leave a count behind.
//
// What Close cannot wait for is the program's own access to memory it still
// holds: a slice of a closed heap faults when touched, as the package doc
// says.

// Close unmaps all of the heap's memory: every slice it handed out becomes
// invalid, and touching one faults. Later calls on the heap, its Arenas,
// Locals and Shareds fail with ErrClosed (or panic with an error wrapping
// it). Close must not run concurrently with other calls on the heap; a
// second Close returns nil. In checked mode Close returns a *LeakError when
// blocks are still live.
func (h *Heap) Close() error {
	if !h.made() {
		return errUnmade
	}
	h.closeMu.Lock()
	defer h.closeMu.Unlock()
	if h.closed.Swap(true) {
		return nil
	}
	// Take every per-P structure out of service and wait until no
	// goroutine can be inside a fast path or a slow path.
	chk := h.chk
	h.mags.outOfService()
	if chk != nil {
		chk.outOfService()
	}
	atomic.StoreUintptr(&h.fastSize, 0) // Free's fast path: see there
	h.arenasOutOfService()
	quiesce()
	h.waitIdle()
	for c := range h.central {
		// Taking the lock is the point: it waits out the operation that
		// holds it, and every later one sees the heap closed (central.get).
		h.central[c].mu.Lock()
		h.central[c].mu.Unlock() //lint:ignore SA2001 the critical section is empty on purpose
	}

	var leaks error
	if chk != nil {
		leaks = chk.close()
	}
	mags := h.closeMagazines()
	h.pages.Close()
	errs := []error{h.closeCaches()}
	for _, m := range mags {
		errs = append(errs, osmem.Unmap(unsafe.Pointer(m), unsafe.Sizeof(*m)))
	}
	errs = append(errs, h.pages.Unmap())
	errs = append(errs, osmem.Unmap(h.busy, maxProcs*busyStride))
	if err := errors.Join(errs...); err != nil {
		return errors.Join(leaks, err)
	}
	return leaks
}
