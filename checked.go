package offheap

// Checked mode: Go checks bounds, not lifetimes; the checker checks
// lifetimes.
//
// A checked heap (Options.Checked, Options.GuardPages, or the offheapchecked
// build tag) is a fast heap whose fast paths decline every operation, and
// one seam hands what they decline to its checker: allocSlow and freeSlow
// call it through two functions the checker sets (Heap.checkAlloc,
// checkFree: the layer below names none of the checker's code), and
// Trim, Close and Stats are the only other core paths that name it
// (Heap.chk; TestCheckerSeam). Its magazines keep sampleAt equal to hits, so every Alloc
// falls to allocSlow, and Free's fast path takes none of its addresses
// (Heap.fastSize is 0), so every Free falls to freeSlow; fast mode pays no
// flag test for it (BenchmarkPair64). A sampled heap (Options.GuardOneIn
// without Checked) keeps its fast paths, and its slow path hands the
// checker one allocation in about GuardOneIn and their frees.
// The two kinds of heap have two names: checked is checked mode,
// hasChecker is either.
//
// The other layers reach the checker through the seam or its methods: the
// Local forwards in checked mode (Heap.checked); Realloc copies through
// Alloc and Free, and asks checkLive first; Ref and Bytes resolve a handle
// through its records; a Shared of a heap with a checker is kept in the
// registry, and a Hot one of a checked heap counts on one count; an Arena's
// freed runs go to its quarantine, and an allocation at the limit empties
// it. When the guard pages' next sample is due is the samplers' to say
// (sampling.go), and the checker's to serve.
//
// The checker allocates through the heap's own layers, so that a checked
// program exercises them: a small checked block is a block of the size
// class for its length plus a canary, taken from and given back through the
// P's magazine as the fast path would (without a lock, a Go map or a shared
// cache line on the way); a large one is a page run of
// its own (allocLarge); a guarded one is a page run with a guard page.
//
// # Metadata
//
// Every checked block has one record, of one type whatever the block's kind,
// in a record table that mirrors the heap's address space: one record per 32
// bytes, at the block start's offset, found with a subtraction and a mask,
// off-heap and out of reach of a program's overruns into blocks. The pagemap
// says what an address is (a small class, a large run, a guarded run, an
// arena's memory), so no record does. A record holds the block's state (none,
// live, freeing, freed), the length it was allocated with, a seal of its start
// and length keyed by the heap's identity (a random per-heap id), which Free
// verifies before it trusts the record, so that a stray write that reached it
// is reported as Corrupted instead of acted on, and the stacks of its
// allocation and of its free. Free moves the state from live to freeing with
// one compare-and-swap: of two Frees of one block exactly one proceeds, so a
// double free is found without a lock.
//
// A stack is the raw PCs walked from frame pointers, kept
// once in a process-wide depot and symbolized only when
// reported. allocSlow and freeSlow walk it from their own frames, so
// that it starts at the caller of Alloc or Free: every frame between the
// program and the walk would cost each capture a dependent load, and the
// heap's own frames are trimmed when a stack is printed (internalFrame).
//
// Next to the block, off-heap, is a trailing canary: a small or large block
// is allocated canaryLen bytes longer than asked, and every byte from the
// requested length to the end of the underlying block (small), the canary
// (large) or the guard page (guarded) holds a pattern derived from the
// heap's id and the block's address. Free checks it: an unsafe write past
// len is Corrupted.
//
// # Free and the quarantine
//
// Free finds the block from the pagemap and its record (InvalidFree if there
// is none or it is not live: never allocated, not a block start, or freed long
// ago; ForeignFree if the address lies in another checked heap, found in a
// process-wide registry of checked heaps' address ranges), refuses a freed one
// (DoubleFree, with both stacks), verifies it (Corrupted), then marks it
// freed, poisons the block (every byte poisonByte) or, for a guarded one,
// makes its pages inaccessible, and puts it at the back of the quarantine:
// FIFO rings bounded in blocks and in bytes, one per P for the small blocks
// that P freed and one for the heap's page runs. A block is not reused while
// it waits there. When a ring is full its oldest block leaves: its poison is
// checked (a mismatch is a write after free: WriteAfterFree, with both stacks,
// panicked from the Free that pushed it out), its record goes back to none and
// the block goes back to the heap. Close checks every block still in the
// quarantine the same way and joins what it finds to its error; when an
// allocation meets the heap's limit, the calling P's ring and the runs' ring
// give their blocks back and the allocation is retried; Trim empties every
// ring.
//
// # Invariants
//
//   - A block has a live or freed record from its Alloc until it leaves the
//     quarantine; only then does the underlying block go back to the heap.
//     So a checked block is never handed out twice while either holder can
//     still free it. A span or run goes back to the page heap only when all
//     its blocks have, so every record of a free page is none, and the page
//     heap releases a run's records with its pages.
//   - Locks: the checker takes no central or page-heap lock itself; it calls
//     the heap's layers (magazines, runs, Lookup's run search), which take
//     their own, and holds none of its own meanwhile. No lock is taken while
//     pinned.
//   - Stats: checked blocks are real blocks of the magazines, the central
//     lists and the page heap, and are counted there. A block in quarantine
//     has been freed by the program but not yet by the heap; the census
//     adds the quarantine to Frees so the counts stay exact (Stats counts a
//     checked block at the size of its underlying block, canary included).

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/pageheap"
)

// raise logs every *MemoryError in err (one, or several joined) and panics
// with err. Called unpinned, as every panic of the checker is.
func (c *checker) raise(err error) {
	c.found.add(err)
	panic(err)
}

// initChecked sets up checked mode (or sampling) for h, whose regions have
// their parts of the record table (reserve), and in a heap that checks
// every block turns Free's fast path off.
func (h *Heap) initChecked() {
	c := &checker{
		h:     h,
		id:    rand.Uint64() | 1,
		all:   h.checked(),
		guard: h.opts.GuardPages,
		rate:  uint64(h.opts.GuardOneIn),
		base:  h.base,
		size:  h.size,
		pmap:  h.pmap,
	}
	c.table = h.pages.Regions.Load().ByPage[0].Shadow
	c.q.init(quarantineBlocks, quarantineBytes)
	callstack.InitDepot()
	register(c)
	h.chk = c
	h.checkAlloc, h.checkFree, h.checkLive = c.onAlloc, c.onFree, c.liveAt
	if !c.all {
		c.mapPool()
	}
	if c.all {
		h.fastSize = 0 // every Free to freeSlow, which hands it to the checker
	}
}

// plainSmall reports whether an allocation of n bytes is a small block with
// nothing else to decide (every allocation is checked, none guarded or
// sampled), which allocSlow hands straight to allocSmall: a call fewer than
// through alloc, in checked mode's commonest case.
func (c *checker) plainSmall(n int) bool {
	return c.all && !c.guard && c.rate == 0 && uint(n)-1 < maxSmall-canaryLen
}

// onAlloc serves an allocation the checker takes (Heap.checkAlloc), for a
// caller at st: every one in checked mode, the guard pages' samples
// otherwise. It tries once more after a reclaim at the limit.
func (c *checker) onAlloc(n int, zero bool, st stackID) ([]byte, error) {
	h := c.h
	if c.plainSmall(n) {
		if b, err := c.allocSmall(n, zero, st); err == nil {
			return b, nil
		} // else alloc tries again, and says why
	}
	var rc reclaimTry
	for {
		b, err := c.alloc(n, zero, st)
		if err == nil || !rc.again(h, n, err) {
			return b, err
		}
	}
}

// alloc serves an allocation the checker takes, for a caller at st.
func (c *checker) alloc(n int, zero bool, st stackID) ([]byte, error) {
	// Decided once: the retry below must not draw the sample again.
	guard := c.guard || !c.all || (c.rate > 0 && c.h.guardTick())
	for retried := false; ; retried = true {
		var b []byte
		var err error
		if !guard && n <= maxSmall-canaryLen {
			b, err = c.allocSmall(n, zero, st)
		} else {
			b, err = c.allocRun(n, zero, guard, st)
		}
		// At the limit, the quarantine may hold the memory the limit
		// refuses: it gives it back, and the allocation is tried once more.
		if retried || !errors.Is(err, ErrLimit) || !c.flushLocal() {
			return b, err
		}
	}
}

// allocRun allocates a checked block of n bytes for a caller at st, between
// enter and exit: on guard pages if guard, else a large run (small blocks
// are allocSmall's).
func (c *checker) allocRun(n int, zero, guard bool, st stackID) ([]byte, error) {
	h := c.h
	if !h.enter() {
		return nil, ErrClosed
	}
	defer h.exit()
	if guard {
		return c.allocGuarded(n, zero, st)
	}
	a, err := h.allocLarge(n+canaryLen, zero, pageheap.ClassLarge) // zeroes what may be dirty, as a fast heap's does
	if err != nil {
		return nil, err
	}
	c.fill(a, uint64(n), st)
	canary(c.canaryKey(a), a+uintptr(n), a+uintptr(n)+canaryLen, true)
	return bytesAt(a, n), nil
}

// onFree frees a for a caller at st (Heap.checkFree): every Free in
// checked mode, a sampled heap's Frees of its guarded blocks.
func (c *checker) onFree(a uintptr, st stackID) {
	if c.all && c.freeSmall(a, st) {
		return
	}
	c.freeRun(a, st) // page runs, and every address the checker refuses
}

// freeRun frees a page run's block (large or guarded), between enter and
// exit, and refuses every other address.
func (c *checker) freeRun(a uintptr, st stackID) {
	h := c.h
	if !h.enter() {
		panic(fmt.Errorf("%w: Free of %#x", ErrClosed, a))
	}
	defer h.exit()
	var r *record
	p := h.placeOf(a) // what is at a
	cl := p.class
	switch {
	case p.kind == placeArena:
		panic(arenaFree(a))
	case p.kind == placeRun && p.class == pageheap.ClassLarge:
		r = c.rec(a)
	case p.kind == placeGuarded:
		// a is the block's start if its record is a's; a record of a's
		// granule sealed for another start is the block's when a is inside
		// it, or a corrupted one when the run holds no other block.
		r = c.rec(a)
		if r.state != stateNone && r.sum != c.seal(a, r.size) {
			if start, _ := c.guardedBlock(guardBase(a)); start != 0 && start != a {
				r = nil
			}
		}
	}
	if r == nil || r.state == stateNone {
		c.raise(c.unknownFree(a))
	}
	if !atomic.CompareAndSwapUint32(&r.state, stateLive, stateFreeing) {
		c.raise(c.notLive(a, r, st))
	}
	// From here the record is ours: a racing Free of the same block fails
	// the compare-and-swap above.
	size := r.size
	if r.sum != c.seal(a, size) {
		r.state = stateLive // leave the block as it is
		c.raise(corrupted(a))
	}
	intact := canary(c.canaryKey(a), a+uintptr(size), c.blockEnd(a, cl, size), false)
	alloc := r.alloc
	r.free = st
	r.state = stateFreed
	var err error
	switch {
	case cl != pageheap.ClassGuarded:
		poison(bytesAt(a, int(c.poisonLen(a, cl))))
		err = c.quarantineRun(a, cl)
	case c.inPool(guardBase(a)):
		c.protectFreed(a)
		c.retire(guardBase(a), a) // the pool is its own quarantine
	default:
		c.protectFreed(a)
		err = c.quarantineRun(a, cl)
	}
	if !intact {
		err = errors.Join(overrun(a, size, alloc), err)
	}
	if err != nil {
		c.raise(err)
	}
}

// flushedAtLimit reports whether err is the limit's refusal and the
// checker's quarantine held memory, which flush gave back: the allocation
// (an Arena's run) is then worth trying once more, as in checker.alloc.
// Called between enter and exit.
func (h *Heap) flushedAtLimit(err error) bool {
	c := h.chk
	return c != nil && errors.Is(err, ErrLimit) && c.flush(false)
}

// flushLocal empties what an allocation at the limit can empty without a
// stop of the world (flush), between enter and exit, and reports whether
// the quarantine held anything.
func (c *checker) flushLocal() bool {
	if !c.h.enter() {
		return false
	}
	defer c.h.exit()
	return c.flush(false)
}

// flush empties the quarantine, giving every block back, and reports
// whether it held any. It panics with the writes after free it finds.
// Called between enter and exit: by Trim, with allPs, and when an
// allocation meets the heap's limit, without: then only the calling P's
// ring and magazine are emptied, with the runs' ring, which needs no stop of
// the world.
func (c *checker) flush(allPs bool) bool {
	var out []ringSlot
	if allPs {
		out = c.q.takeAll(c)
	} else {
		out = c.q.takeLocal(c)
	}
	out = c.q.takeShared(c, out)
	errs := c.releaseAll(out)
	held := c.dropSpareRuns() || len(out) > 0
	if !allPs && c.all {
		c.h.drainLocalMagazine() // Trim drains every P's
	}
	if err := joinErrors(errs); err != nil {
		c.raise(err)
	}
	return held
}

// outOfService takes the quarantine's rings out of service, for Close.
func (c *checker) outOfService() { c.q.rings.outOfService() }

// close reports leaks at Close as a *LeakError, joined with the writes after
// free found in the quarantine, or nil. The blocks stay where they are:
// Close unmaps them all, with the record table and the rings. The
// quarantine's census stays as it is, so that Stats after Close still
// counts those blocks as freed.
func (c *checker) close() error {
	unregister(c)
	errs := c.q.close(c)
	for _, err := range errs {
		c.found.add(err)
	}
	if leaks := c.leaks(); len(leaks) > 0 {
		le := &LeakError{Leaks: leaks}
		c.closeLeaks.Store(le)
		errs = append(errs, le)
	}
	return joinErrors(errs)
}

// census adds the quarantine to s: those blocks are freed as far as the
// program is concerned. Called by Stats.
func (c *checker) census(s *Stats) {
	var qs [numClasses]uint64
	runs, runPages := c.quarantined(&qs)
	for cl := 1; cl < numClasses; cl++ {
		q := qs[cl]
		if q == 0 {
			continue
		}
		cs := &s.Classes[cl-1]
		q = min(q, cs.InUse) // never wrap: see Stats
		cs.Frees += q
		cs.InUse -= q
		s.Frees += q
		s.InUseBytes -= q * uint64(cs.Size)
	}
	s.Frees += runs
	s.InUseBytes -= min(runPages<<pageShift, s.InUseBytes)
}

// quarantined adds the small blocks in the quarantine to q by class, and
// returns the runs there and the pages they hold. It takes the quarantine's
// locks and allocates nothing (Stats, InUse).
func (c *checker) quarantined(q *[numClasses]uint64) (runs, runPages uint64) {
	return c.q.census(q)
}

// joinErrors is errors.Join, except that one error stays itself, so that a
// recovered panic value is the *MemoryError.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
