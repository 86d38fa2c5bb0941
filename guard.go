package offheap

// Guard pages and sampling: Electric Fence for every allocation
// (Options.GuardPages) or GWP-ASan for one in about SampleRate
// (Options.SampleRate).
//
// A guarded block of n bytes gets a page run of its own: ceil(n/8 KiB) data
// pages and one guard page after them, which is made inaccessible
// (PROT_NONE). The block is placed at the end of its data pages, rounded up to
// 16 bytes so that it keeps Alloc's alignment: a read or write past its end
// reaches the guard page within 15 bytes (those 15 are a canary, checked at
// Free). When the block is freed its data pages become inaccessible too and
// the run waits in the checker's quarantine (checked.go), so the address is
// not reused at once; when it leaves, the pages are made accessible again and
// go back to the page heap; a one-page run (a block of up to 8 KiB, the usual
// sample) is kept instead, all of it still inaccessible, for the next guarded
// block (up to maxSpareRuns of them), which then costs one mprotect, not two.
//
// The pagemap marks every page of the run, guard page included, with
// classGuarded: Free's fast path takes no such block for a small one and falls
// to freeSlow, which hands it to the checker (checker.owns). Words have the
// large-block layout: the first page holds the number of data pages in bits
// 32-63, the others have bit 8 set. The runs table maps a run's first page to
// its block's start, for Lookup.
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
// protectRegion leaves accessible; region_race.go.) To learn which block the address belonged to and where it was
// allocated and freed, make the fault recoverable with
// debug.SetPanicOnFault(true) on the goroutine that may fault: the fault then
// panics with a runtime.Error that has an Addr() uintptr method, and
// Heap.Lookup(addr) describes the block.
//
// Every guarded block costs two mappings in the kernel's view (its
// accessible pages and its guard page), and Linux limits a process to about
// 65,000 (vm.max_map_count): GuardPages suits tests and small heaps; sampling
// suits production. An Alloc that finds the limit reached fails like any
// failed mmap.
//
// # Sampling
//
// A sampled heap is a fast heap with a checker that takes only sampled
// allocations. The decision costs the fast path one compare: each magazine
// class keeps, next to its count of magazine hits, the hit count at which the
// next allocation is sampled (magClass.sampleAt). The fast path stops short
// when the two are equal, so the allocation falls to the slow path, where
// sampleDue draws the next interval (uniform in [1, 2*SampleRate-1], mean
// SampleRate, random so that a periodic program is not always sampled at the
// same call) and the checker allocates the block with guard pages. A heap
// that does not sample sets sampleAt to the maximum uint64, which the hit
// count never reaches. Allocations that miss the magazine (a refill, or a
// large block) are sampled by a shared counter instead.
//
// A sample costs system calls, and they, not the bookkeeping, set the price
// of sampling. Measured on a 2-vCPU VM whose page tables the hypervisor
// shadows (a null system call, getpid, takes 1 µs there): mprotect of one
// page to PROT_NONE takes 12-70 µs when the page has been touched (the TLB
// flush) and 4-6 µs when it has not; back to read-write 5.5 µs; the first
// write after that faults, about 5 µs. A sample on a spare run makes two
// of those calls (read-write at Alloc, PROT_NONE at Free) and takes the
// fault; a sample on a new run made three (its guard page, PROT_NONE at
// Free, read-write when it left the quarantine). In BenchmarkCheckedPair64
// a sample costs about 21 µs with spare runs and 25 µs without, so
// SampleRate 1000 adds about 21 ns to every allocation, 2.7-3.0x a 12 ns
// fast pair; SampleRate 20000 is within 10%. The PROT_NONE at Free alone is ten
// times the 1.2 µs per sample that would keep SampleRate 1000 within 1.1x
// there.
// Deferring the PROT_NONE of freed blocks to batch it would cut that cost
// but leave a window in which a use after free does not fault.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/offheap/offheap/internal/pin"
)

// classGuarded is the pagemap class of a guarded run's pages.
const classGuarded = 0xfe

// guardAlign is the alignment of a guarded block: Alloc's.
const guardAlign = 16

// allocGuarded allocates n bytes on pages of their own, followed by a guard
// page, for a block allocated at st.
func (c *checker) allocGuarded(n int, zero bool, st stackID) ([]byte, error) {
	span := (uint64(n) + guardAlign - 1) &^ (guardAlign - 1)
	np, ok := pagesFor(int(min(span, math.MaxInt64)))
	if !ok || np+1 < np {
		return nil, fmt.Errorf("%w: %d bytes is more than a heap can hold", ErrSize, n)
	}
	base, dirty, err := c.guardedRun(np)
	if err != nil {
		return nil, err
	}
	a := base + uintptr(np)<<pageShift - uintptr(span)
	b := bytesAt(a, n)
	if zero && dirty {
		clear(b)
	}
	c.runMu.Lock()
	c.runs[base] = a
	c.runMu.Unlock()
	r := record{addr: a, size: n, usable: uint32(span), pages: np, kind: kindGuarded}
	if span > math.MaxUint32 {
		r.usable = 0 // too long to note: no canary check
	}
	c.fillCanary(&r)
	c.insert(&r, st)
	return b, nil
}

// guardedRun returns the first page of a run of np accessible data pages
// followed by an inaccessible guard page, counted as a large block, and
// whether its data pages may hold old bytes: a spare run if there is one,
// else a new run from the page heap.
func (c *checker) guardedRun(np uint32) (base uintptr, dirty bool, err error) {
	h := c.h
	ph := &h.pages
	if np == 1 {
		c.runMu.Lock()
		if k := len(c.spareRuns); k > 0 {
			base = c.spareRuns[k-1]
			c.spareRuns = c.spareRuns[:k-1]
		}
		c.runMu.Unlock()
		if base != 0 {
			ph.mu.Lock()
			if ph.closed { // Close unmapped it
				ph.mu.Unlock()
				return 0, false, ErrClosed
			}
			ph.largeAllocs.Add(1)
			ph.largePages.Add(2)
			ph.mu.Unlock()
			if err := commitRegion(ptr(base), pageSize); err != nil {
				c.releaseGuarded(base, 1) // counts it freed: Allocs and Frees stay paired
				return 0, false, err
			}
			return base, true, nil
		}
	}
	ph.mu.Lock()
	if ph.closed {
		ph.mu.Unlock()
		return 0, false, ErrClosed
	}
	first, nd, err := ph.alloc(np+1, func(i uint32) uint64 {
		if i == 0 {
			return classGuarded | uint64(np)<<32
		}
		return classGuarded | 1<<8
	})
	if err == nil {
		// Counted as a large block: Stats.Large, and InUseBytes by pages.
		ph.largeAllocs.Add(1)
		ph.largePages.Add(uint64(np + 1))
	}
	ph.mu.Unlock()
	if err != nil {
		return 0, false, err
	}
	base = ph.addr(first)
	if err := protectRegion(ptr(base+uintptr(np)<<pageShift), pageSize); err != nil {
		c.releaseGuarded(base, np)
		return 0, false, err
	}
	return base, nd > 0, nil
}

// guardBase is the first page of the guarded run that holds the block at a.
// The block starts in the run's first page: the run has ceil(span/pageSize)
// data pages, so the span reaches back more than np-1 pages from their end.
// (a may also be the first page itself.)
func guardBase(a uintptr) uintptr { return a &^ (pageSize - 1) }

// protectFreed makes the data pages of the freed guarded block at a
// inaccessible. If that fails (the kernel's mapping limit) the block is
// still quarantined, only unprotected.
func (c *checker) protectFreed(a uintptr, np uint32) {
	_ = protectRegion(ptr(guardBase(a)), uintptr(np)<<pageShift)
}

// releaseGuarded gives back the run of the guarded block at a (or of the
// run starting at a) with np data pages, counting it freed: a one-page run
// to the spares, inaccessible as it is, while there is room; any other
// accessible again, to the page heap.
func (c *checker) releaseGuarded(a uintptr, np uint32) {
	base := guardBase(a)
	c.runMu.Lock()
	delete(c.runs, base)
	spare := np == 1 && len(c.spareRuns) < maxSpareRuns
	if spare {
		c.spareRuns = append(c.spareRuns, base)
	}
	c.runMu.Unlock()
	ph := &c.h.pages
	if spare {
		ph.mu.Lock()
		ph.largeFrees.Add(1)
		ph.largePages.Add(^uint64(2 - 1)) // minus 2
		ph.mu.Unlock()
		return
	}
	// The page heap's free pages are read-write: its next user writes them.
	// Should this fail, the pages stay out of the page heap (and counted).
	if err := commitRegion(ptr(base), uintptr(np+1)<<pageShift); err != nil {
		return
	}
	ph.mu.Lock()
	ph.largeFrees.Add(1)
	ph.largePages.Add(-uint64(np + 1))
	if !ph.closed {
		first, _ := ph.pageOf(base)
		ph.release(first, np+1)
	}
	ph.mu.Unlock()
}

// maxSpareRuns is how many one-page guarded runs a checker keeps for reuse:
// 1 MiB of address space, none of it accessible.
const maxSpareRuns = 64

// dropSpareRuns gives every spare run back to the page heap, accessible
// again, and reports whether there were any. Trim and a heap at its limit
// call it, through flush.
func (c *checker) dropSpareRuns() bool {
	c.runMu.Lock()
	spares := c.spareRuns
	c.spareRuns = nil
	c.runMu.Unlock()
	ph := &c.h.pages
	for _, base := range spares {
		if commitRegion(ptr(base), 2*pageSize) != nil {
			continue // stays out of the page heap, as in releaseGuarded
		}
		ph.mu.Lock()
		if !ph.closed {
			first, _ := ph.pageOf(base)
			ph.release(first, 2)
		}
		ph.mu.Unlock()
	}
	return len(spares) > 0
}

// sampleDue reports whether the allocation of n bytes that reached the slow
// path of a sampled heap is sampled: its magazine class's hit count reached
// sampleAt (then the next interval is drawn), or, for one that has no
// magazine to count it, the shared counter says so.
func (c *checker) sampleDue(n int) bool {
	if c.rate == 0 {
		return false
	}
	h := c.h
	if n > maxSmall || !h.magazines {
		return c.ticks.Add(1)%c.rate == 0
	}
	cl := sizeClass(n)
	next := c.interval()
	due, counted := false, false
	pid := pin.Pin()
	if m := h.mag(pid); m != nil {
		mc := &m.cls[cl]
		counted = true
		if mc.hits >= mc.sampleAt {
			mc.sampleAt = mc.hits + next - 1 // this one, then next-1 hits
			due = true
		}
	}
	pin.Unpin()
	if !counted { // this P has no magazine yet
		return c.ticks.Add(1)%c.rate == 0
	}
	return due
}

// interval draws how many allocations the next sample is for: the sampled
// one and the interval-1 magazine hits after it.
func (c *checker) interval() uint64 {
	return 1 + rand.Uint64N(2*c.rate-1)
}

// sampleStart is the sampleAt of a new magazine's classes: the first
// interval for a sampled heap, never for any other.
func (h *Heap) sampleStart() uint64 {
	if c := h.chk; c != nil && !c.all && c.rate > 0 {
		return c.interval() - 1
	}
	return math.MaxUint64
}
