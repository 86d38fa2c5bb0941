package offheap

// Guard pages and sampling: Electric Fence for every allocation
// (Options.GuardPages) or GWP-ASan for one in about GuardOneIn
// (Options.GuardOneIn).
//
// A guarded block of n bytes gets a page run of its own: its data pages,
// ceil(n/8 KiB) rounded up to whole OS pages, and a guard page after them, one
// OS page, which is made inaccessible (PROT_NONE); the run starts on an OS
// page, so that no protection reaches a neighbour (with 4 KiB OS pages an OS
// page here is one heap page). The block is placed at the end of its data
// pages, rounded up to 16 bytes so that it keeps Alloc's alignment: a read or
// write past its end reaches the guard page within 15 bytes (those 15 are a
// canary, checked at Free). When the block is freed its data pages become
// inaccessible too and the run waits in the checker's quarantine, so the
// address is not reused at once; when it leaves, the pages are made accessible
// again and go back to the page heap; a run of one OS page of data (a block of
// up to 8 KiB, the usual sample, with OS pages of 8 KiB or less) is kept
// instead, all of it still inaccessible, for the next guarded block (up to
// maxSpareRuns of them), which then costs one mprotect, not two.
//
// The pagemap marks every page of the run, guard page included, with
// pageheap.ClassGuarded: Free's fast path takes no such block for a small one and falls
// to freeSlow, whose switch on the class hands it to the checker. Words have the
// layout of every run of its own: the first page holds the run's
// length, guard pages included, in bits 32-63, the others have bit 8 set.
// The block's record is at its start, as every checked block's is; Lookup
// finds it from any page of the run.
//
// # What a fault looks like
//
// A use after free or past the end of a guarded block is an access to a
// PROT_NONE page: SIGSEGV. The Go runtime turns a fault in Go code into a
// fatal error, printed to stderr before the process exits with status 2:
//
//	unexpected fault address 0x7f3a1c2fe000
//	fatal error: fault
//	[signal SIGSEGV: segmentation violation code=0x2 addr=0x7f3a1c2fe000 pc=0x4a1b2c]
//
// followed by the goroutine's traceback, which shows where the bad access
// happened. (Not in a race build: the heap is Go memory there, which
// pageheap.ProtectRegion leaves accessible.) To learn which block
// the address belonged to and where it was allocated and freed, make the
// fault recoverable with debug.SetPanicOnFault(true) on the goroutine that
// may fault: the fault then panics with a runtime.Error that has an Addr()
// uintptr method, and FaultError turns the recovered value into a
// *MemoryError with the block's stacks and the faulting access's (Lookup
// describes the block).
//
// Every guarded block costs two mappings in the kernel's view (its accessible
// pages and its guard page), and Linux limits a process to about 65,000
// (vm.max_map_count): GuardPages suits tests and small heaps; sampling suits
// production. Past half the limit, or where the kernel refuses the guard page,
// a guarded block gets none: it is still recorded and checked at Free, but
// does not fault.
//
// # Sampling
//
// A sampled heap is a fast heap with a checker that takes only sampled
// allocations. The decision costs the fast path one compare: each magazine
// class keeps, next to its count of magazine hits, the hit count at which the
// next allocation is sampled (classStack.sampleAt), shared with the profile's
// sampling. The fast path stops short when the two are equal,
// so the allocation falls to the slow path, where sampleDue draws the next
// interval (uniform in [1, 2*GuardOneIn-1], mean GuardOneIn, random so that
// a periodic program is not always sampled at the same call) and the
// checker allocates the block with guard pages. Allocations that miss the
// magazine (a refill, or a large block) are sampled by a shared counter
// instead.
//
// A sample costs system calls, and they, not the bookkeeping, set the price
// of sampling: an mprotect to PROT_NONE of a touched page (its TLB flush)
// most of all, then the mprotect back to read-write and the fault of the
// first write after it. A sample on the pool (mapPool) or a spare run makes
// two of those calls (read-write at Alloc, PROT_NONE at Free) and takes the
// fault, the least a guarded sample can make; a sample on a new run makes
// three or four (its guard page, PROT_NONE at Free, read-write when it
// leaves the quarantine, to the page heap). So the price of a GuardOneIn is
// about the cost of a sample over GuardOneIn pairs (BenchmarkGuardSample,
// BenchmarkSampleRateCost; the figures are in docs/DESIGN.md). Deferring
// the PROT_NONE of freed blocks to batch it would cut that cost but leave a
// window in which a use after free does not fault.

import (
	"fmt"
	"math"
	"runtime"

	"github.com/offheap/offheap/internal/pageheap"
)

// FaultError turns the value recovered from a fault on a guarded block
// (GuardPages or GuardOneIn) into a *MemoryError, UseAfterFree or
// OutOfBounds, with the stacks of the allocation, the free and the access;
// for any other value it returns nil. A fault panics only where
// debug.SetPanicOnFault(true) is set (ExampleFaultError recovers one).
func FaultError(recovered any) *MemoryError {
	f, ok := recovered.(interface{ Addr() uintptr })
	if _, isErr := recovered.(runtime.Error); !ok || !isErr {
		return nil
	}
	a := f.Addr()
	c := lookupHeap(a)
	if c == nil {
		return nil
	}
	info, ok := c.h.Lookup(a)
	if !ok || !info.Guarded {
		return nil
	}
	var st stack // the panicking goroutine's, from the frame that faulted
	st.Callers(2)
	for i, pc := range st.Frames() {
		if fn := runtime.FuncForPC(pc - 1); fn != nil && fn.Name() == "runtime.sigpanic" {
			st.N = int32(copy(st.PCs[:], st.PCs[i:st.N])) // Format skips sigpanic itself
			break
		}
	}
	e := &MemoryError{Kind: OutOfBounds, Addr: a, Size: info.Size, AllocStack: info.AllocStack, AgainStack: st.Format(internalFrame),
		detail: fmt.Sprintf("an access %d bytes past the end of the live guarded block at %#x faulted on its guard page", a-info.Start-uintptr(info.Size), info.Start)}
	if info.Freed {
		e.Kind, e.FreeStack = UseAfterFree, info.FreeStack
		e.detail = fmt.Sprintf("an access %d bytes into the guarded block at %#x faulted: the block is freed", a-info.Start, info.Start)
	}
	c.found.add(e)
	return e
}

// guardAlign is the alignment of a guarded block: Alloc's.
const guardAlign = 16

// slotPages is the length of a guarded run with one OS page of data: the
// pool's slots and the spare runs.
var slotPages = 2 * pageheap.OSPagePages

// allocGuarded allocates n bytes on pages of their own, followed by a guard
// page, for a block allocated at st. Called between enter and exit.
func (c *checker) allocGuarded(n int, zero bool, st stackID) ([]byte, error) {
	span := (uint64(n) + guardAlign - 1) &^ (guardAlign - 1)
	np, ok := pagesFor(int(min(span, math.MaxInt64)))
	if !ok {
		return nil, fmt.Errorf("%w: %d bytes is more than a heap can hold", ErrSize, n)
	}
	np = pageheap.OSPageUp(np) // below 2^31 pages, pagesFor's bound, it and its guard fit uint32
	base, dirty, err := c.guardedRun(np)
	if err != nil {
		return nil, err
	}
	a := base + uintptr(np)<<pageShift - uintptr(span)
	b := bytesAt(a, n)
	if zero && dirty {
		clear(b)
	}
	c.fill(a, uint64(n), st)
	canary(c.canaryKey(a), a+uintptr(n), a+uintptr(span), true)
	return b, nil
}

// guardedRun returns the first page of a run of np accessible data pages,
// whole OS pages, followed by an inaccessible guard OS page, counted as a
// large block, and whether its data pages may hold old bytes: a pool or
// spare run if there is one, else a new run from the page heap.
func (c *checker) guardedRun(np uint32) (base uintptr, dirty bool, err error) {
	ph := &c.h.pages
	if np+pageheap.OSPagePages == slotPages {
		pool := true
		if base = c.poolRun(); base == 0 {
			pool = false
			c.runMu.Lock()
			if k := len(c.spareRuns); k > 0 {
				base = c.spareRuns[k-1]
				c.spareRuns = c.spareRuns[:k-1]
			}
			c.runMu.Unlock()
		}
		if base != 0 {
			if err := ph.ReuseRun(slotPages); err != nil {
				return 0, false, err
			}
			if pageheap.CommitRegion(ptr(base), pageheap.OSPageBytes) == nil {
				return base, true, nil
			}
			// The kernel's mapping limit: counted freed, so that Allocs
			// and Frees stay paired, and a run of its own instead.
			if pool {
				c.retire(base, 0)
			} else {
				c.releaseGuarded(base)
			}
		}
	}
	base, dirty, err = ph.AllocRun(np+pageheap.OSPagePages, pageheap.OSPagePages, pageheap.ClassGuarded)
	if err != nil {
		return 0, false, err
	}
	if !ph.TakeGuardMappings() {
		ph.LeaveUnguarded(base)
		return base, dirty, nil
	}
	if pageheap.ProtectRegion(ptr(base+uintptr(np)<<pageShift), pageheap.OSPageBytes) != nil {
		ph.GiveGuardMappings()
		ph.LeaveUnguarded(base) // the kernel's limit, reached by others
	}
	return base, dirty, nil
}

// guardBase is the first page of the guarded run that holds the block at a.
// The block starts in the run's first OS page: the run has
// ceil(span/osPageBytes) OS pages of data, so the span reaches back into the
// first of them from their end. (a may also be the first page itself.)
func guardBase(a uintptr) uintptr { return a &^ (pageheap.OSPageBytes - 1) }

// guardPage is the guard page of the guarded run that starts at base: its
// last OS page.
func (c *checker) guardPage(base uintptr) uintptr {
	return base + uintptr(c.h.pages.RunPages(base)-pageheap.OSPagePages)<<pageShift
}

// guardedBlock finds the block of the guarded run that starts at base: it
// starts in the run's first OS page, guardAlign-aligned, and its record is
// the only one of that page that is not none. It returns 0 and nil for a
// run that holds none (a spare). Lookup and leaks, not Free, need it.
func (c *checker) guardedBlock(base uintptr) (uintptr, *record) {
	for a := base; a < base+pageheap.OSPageBytes; a += guardAlign {
		if r := c.rec(a); r.state != stateNone && r.sum == c.seal(a, r.size) {
			return a, r
		}
	}
	return 0, nil
}

// protectFreed makes the data pages of the freed guarded block at a
// inaccessible. If that fails (the kernel's mapping limit) the block is
// still quarantined, only unprotected.
func (c *checker) protectFreed(a uintptr) {
	base := guardBase(a)
	if c.h.pages.Unguarded(base) {
		return // accessible, as it was allocated
	}
	_ = pageheap.ProtectRegion(ptr(base), c.guardPage(base)-base)
}

// releaseGuarded gives back the run of the guarded block at a (or of the
// run starting at a), counting it freed: a one-OS-page run to the spares,
// inaccessible as it is, while there is room; any other accessible again,
// to the page heap.
func (c *checker) releaseGuarded(a uintptr) {
	base := guardBase(a)
	ph := &c.h.pages
	if ph.Unguarded(base) { // accessible whole, and no spare
		ph.FreeRun(base, pageheap.ClassGuarded)
		return
	}
	np := ph.RunPages(base) // guard page included
	c.runMu.Lock()
	spare := np == slotPages && len(c.spareRuns) < maxSpareRuns
	if spare {
		c.spareRuns = append(c.spareRuns, base)
	}
	c.runMu.Unlock()
	if spare {
		ph.KeepRun(slotPages)
		return
	}
	// The page heap's free pages are read-write: its next user writes them.
	// Should this fail, the pages stay out of the page heap (and counted).
	if err := pageheap.CommitRegion(ptr(base), uintptr(np)<<pageShift); err != nil {
		return
	}
	ph.GiveGuardMappings()
	ph.FreeRun(base, pageheap.ClassGuarded)
}

// maxSpareRuns is how many one-OS-page guarded runs a checker keeps for
// reuse: 1 MiB of address space with OS pages of 8 KiB or less, none of it
// accessible.
const maxSpareRuns = 64

// poolSlots is how many one-OS-page guarded runs a sampled heap maps when
// it is made (mapPool): 512 KiB of address space with OS pages of 8 KiB or
// less, inaccessible until a sample takes a run, which then has one OS page
// resident at most. GWP-ASan's default pool in Android has 32 slots too.
const poolSlots = 32

// mapPool maps a sampled heap's pool of guarded runs (GWP-ASan's slots):
// one run of the page heap, made inaccessible whole with one system call,
// then carved into poolSlots runs of a data OS page and a guard OS page
// each.
//
// The pool is its own quarantine: a freed block on it keeps its record
// (freed, with both stacks, for Lookup and a second Free) and its run goes
// to the back of the pool's FIFO, inaccessible, while a sample takes the
// run at the front, the one freed longest ago. So a sample on the pool
// costs the two calls that make its data page accessible at Alloc and
// inaccessible at Free, and no more, from the first sample on and after
// Trim. A sample that finds the pool empty (all its runs in use) takes a
// spare run, or one of its own, and the quarantine as before; a heap whose
// pool cannot be had does so for every sample, as does one whose pool
// would take more than an eighth of its Limit: the pool's pages count as
// mapped, 4 MiB of them with 64 KiB OS pages.
func (c *checker) mapPool() {
	ph := &c.h.pages
	n := uintptr(poolSlots * slotPages)
	if ph.Limit != 0 && uint64(n)*8 > ph.Limit {
		return
	}
	base, _, err := ph.AllocRun(uint32(n), pageheap.OSPagePages, pageheap.ClassGuarded)
	if err != nil {
		return
	}
	if pageheap.ProtectRegion(ptr(base), n<<pageShift) != nil {
		ph.FreeRun(base, pageheap.ClassGuarded)
		return
	}
	ph.CarveRuns(base, poolSlots, slotPages)
	p := &c.pool
	p.base, p.end = base, base+n<<pageShift
	for i := range poolSlots {
		p.free[i] = base + uintptr(i)*uintptr(slotPages)<<pageShift
	}
	p.n = poolSlots
}

// inPool reports whether the guarded run at base is one of the pool's.
func (c *checker) inPool(base uintptr) bool { return base-c.pool.base < c.pool.end-c.pool.base }

// poolRun takes the pool's run freed longest ago, or returns 0 if every
// run is in use, and forgets the freed block whose record it kept.
func (c *checker) poolRun() uintptr {
	p := &c.pool
	c.runMu.Lock()
	if p.n == 0 {
		c.runMu.Unlock()
		return 0
	}
	base := p.free[p.head]
	p.head = (p.head + 1) % poolSlots
	p.n--
	i := (base - p.base) >> pageShift / uintptr(slotPages)
	last := p.last[i]
	p.last[i] = 0
	c.runMu.Unlock()
	if last != 0 {
		c.rec(last).state = stateNone
	}
	return base
}

// retire puts the pool's run at base back, inaccessible, at the back of the
// FIFO, counted freed; freed is the start of the freed block whose record
// it keeps, or 0.
func (c *checker) retire(base, freed uintptr) {
	p := &c.pool
	c.runMu.Lock()
	p.free[(p.head+p.n)%poolSlots] = base
	p.n++
	p.last[(base-p.base)>>pageShift/uintptr(slotPages)] = freed
	c.runMu.Unlock()
	c.h.pages.KeepRun(slotPages)
}

// dropSpareRuns gives every spare run back to the page heap, accessible
// again, and reports whether there were any. Trim and a heap at its limit
// call it, through flush; the pool's runs stay.
func (c *checker) dropSpareRuns() bool {
	c.runMu.Lock()
	spares := c.spareRuns
	c.spareRuns = nil
	c.runMu.Unlock()
	for _, base := range spares {
		if pageheap.CommitRegion(ptr(base), uintptr(slotPages)<<pageShift) != nil {
			continue // stays out of the page heap, as in releaseGuarded
		}
		c.h.pages.GiveGuardMappings()
		c.h.pages.DropRun(base)
	}
	return len(spares) > 0
}
