package offheap

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// A heap's address space grows on demand, as the Go heap's does. The page
// heap numbers its pages in one virtual page space, and lays regions
// (reservations of their own, anywhere in the process's address space) into
// it end to end:
//
//	virtual pages: [ region 0 ][gap][ region 1 ][gap][ region 2 ] ...
//
// A region's pages are consecutive virtual pages and consecutive addresses.
// The gap page after each region has no address and is never free, so a
// free run never spans two regions: a run's pages are always contiguous
// memory. The pagemap and the span array are reserved once for the largest
// virtual space (PROT_NONE: they cost nothing until a region's part of them
// is committed), so a page's word is found by its virtual page number alone.
//
// Region 0 is the reservation NewHeap makes; Free's fast path checks only it
// (one subtraction and compare against Heap.base and Heap.fastSize). An
// address in a later region is found through the region set, an immutable
// sorted slice published atomically (regionSet): freeSlow and the other
// lookups take it, then the same path as region 0.
//
// What the rest of the heap may assume of regions: each is a multiple of
// osPageBytes long and starts on an osPageBytes boundary, and its first
// virtual page is a multiple of osPagePages, and of hugeSpan with huge pages
// on; they do not overlap; they are created under pageHeap.mu and live until
// Close. Nothing else: not their count, their order in memory, their adjacency
// or their size beyond what was asked. mapRegion and unmapRegion are the only
// code that obtains and gives back a region's memory, and commitRegion and
// protectRegion the only code that changes what may access it: reservations of
// the operating system's, or Go memory in race-detector builds. Releasing
// pages (osmem.Release, madvise) works on either.

// maxVirtPages is the size of the largest virtual page space, 16 TiB: page
// numbers and run lengths are uint32, and a large block's length in pages
// must fit 31 bits (pagesFor). The pagemap for it takes 16 GiB of address
// space and the span array 10 GiB, reserved and not committed; a system that
// refuses that much gets a smaller space (reserve halves it).
const maxVirtPages = 1 << 31

// regionGuard is the inaccessible address space a region of the system's
// memory (region_os.go) keeps on either side of it, reserved with it and
// never committed: at least the largest size class (sizeclass.go holds the
// two in step), so that no write running or skipping past a block at the
// region's edge, short of that many bytes, reaches whatever the system maps
// next to it, the heap's metadata included (docs/DESIGN.md, What lives
// where). A multiple of the largest OS page, 64 KiB, and so of
// osPageBytes, so the region stays aligned.
const regionGuard = 256 << 10

var _ = [1]struct{}{}[regionGuard%(64<<10)]

// region is one reservation laid into the virtual page space. Immutable once
// published.
type region struct {
	base  uintptr // first byte, osPageBytes aligned
	bytes uintptr // bytes reserved: pages << pageShift
	first uint32  // virtual page of base
	pages uint32
	// shadow is, in a heap with a checker, the region's part of the
	// checker's record table: bytes long, mirroring the region byte for
	// byte. nil otherwise.
	shadow unsafe.Pointer
}

// hugeSpan is the number of heap pages in a 2 MiB huge page, the only huge
// page size HugePages uses.
const hugeSpan = 2 << 20 >> pageShift

// hugeRange is the first page of the range that holds page p of region r,
// and false if p lies in r's partial last stretch.
func hugeRange(r *region, p uint32) (uint32, bool) {
	k := r.first + (p-r.first)&^(hugeSpan-1)
	return k, k+hugeSpan <= r.first+r.pages
}

// regionSet is every region of a heap: byPage in virtual page order (the
// order they were made), byAddr by base address. Replaced whole, never
// changed, so that lookups need no lock.
type regionSet struct {
	byPage []*region
	byAddr []*region
}

// byAddress is the region that holds address a, or nil.
func (rs *regionSet) byAddress(a uintptr) *region {
	i, found := slices.BinarySearchFunc(rs.byAddr, a, byBase)
	if !found {
		if i == 0 {
			return nil
		}
		i--
	}
	if r := rs.byAddr[i]; a-r.base < r.bytes {
		return r
	}
	return nil
}

// byPageNum is the region that holds virtual page p, which must be a page of
// some region (not a gap).
func (rs *regionSet) byPageNum(p uint32) *region {
	i, found := slices.BinarySearchFunc(rs.byPage, p, byFirst)
	if !found {
		i--
	}
	return rs.byPage[i]
}

// holding is the region that holds virtual page p, or nil when p is a gap
// page or lies past every region.
func (rs *regionSet) holding(p uint32) *region {
	i, found := slices.BinarySearchFunc(rs.byPage, p, byFirst)
	if !found {
		if i == 0 {
			return nil
		}
		i--
	}
	if r := rs.byPage[i]; p-r.first < r.pages {
		return r
	}
	return nil
}

// with returns a new set with r added. r's pages come after every region's.
func (rs *regionSet) with(r *region) *regionSet {
	i, _ := slices.BinarySearchFunc(rs.byAddr, r.base, byBase)
	return &regionSet{
		byPage: append(slices.Clip(rs.byPage), r),
		byAddr: slices.Insert(slices.Clone(rs.byAddr), i, r),
	}
}

func byBase(r *region, a uintptr) int { return cmp.Compare(r.base, a) }
func byFirst(r *region, p uint32) int { return cmp.Compare(r.first, p) }

// errNoMeta is mapShadow's refusal: the record table cannot be mapped.
var errNoMeta = errors.New("offheap: checked mode: mapping block metadata failed")

// mapShadow maps a checked heap's part of the record table for a region of
// n bytes (region.shadow), read-write and zero, backed only as records are
// written.
func mapShadow(n uintptr) (unsafe.Pointer, error) {
	p, err := osmem.Map(n)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoMeta, err)
	}
	return p, nil
}

// outOfSpace is the error for an allocation of need bytes that found the
// virtual page space full (err nil) or the system unwilling.
func (ph *pageHeap) outOfSpace(need uint64, err error) error {
	return &addressSpaceError{need: need, have: uint64(ph.reservedBytes), most: uint64(ph.maxPages) << pageShift, err: err}
}

// regionGrain is the size later regions are rounded up to, so that a heap
// that grows by small allocations makes few regions.
const regionGrain = 64 << 20

// addRegion reserves a region of at least n pages and makes it the current
// one: new pages come from its frontier. What is left of the old current
// region is committed and becomes a free run, so it is used again; should
// the commit fail, those pages are never used. Called with mu held.
func (ph *pageHeap) addRegion(n uint32) error {
	rs := ph.regions.Load()
	last := rs.byPage[len(rs.byPage)-1]
	first := uint64(osPageUp(last.first + last.pages + 1)) // a gap page at least
	if ph.huge.on {
		// A range's first page, so that a multiple of hugeSpan in the
		// virtual page space is one in memory.
		first = (first + hugeSpan - 1) &^ (hugeSpan - 1)
	}
	room := uint64(ph.maxPages) - min(first, uint64(ph.maxPages))
	n = osPageUp(n)
	need := uint64(n) << pageShift
	if uint64(n) > room {
		return ph.outOfSpace(need, nil)
	}
	// Grow geometrically (the new region is as large as all before it), so
	// a heap that keeps growing makes few regions, and at least by a grain.
	want := max(need, uint64(ph.reservedBytes), regionGrain)
	want = min(want, room<<pageShift)
	var p unsafe.Pointer
	var err error
	for {
		if p, err = mapRegion(uintptr(want)); err == nil {
			break
		}
		if want == need {
			return ph.outOfSpace(need, err)
		}
		want = max(want/2&^uint64(osPageBytes-1), need)
	}
	r := &region{base: uintptr(p), bytes: uintptr(want), first: uint32(first), pages: uint32(want >> pageShift)}
	if err := ph.commitMeta(r); err != nil {
		unmapRegion(p, r.bytes)
		return err
	}
	if ph.shadowed {
		if r.shadow, err = mapShadow(r.bytes); err != nil {
			unmapRegion(p, r.bytes)
			return err
		}
	}
	// The rest of the old region becomes a free run of zero pages.
	if tail := last.pages - ph.frontier; tail > 0 {
		at := last.first + ph.frontier
		if ph.commitAbove(last, last.pages) == nil {
			ph.committed += uint64(tail)
			ph.released += uint64(tail)
			ph.addRun(at, tail, freeRun{})
		}
	}
	ph.regions.Store(rs.with(r))
	ph.reservedBytes += r.bytes
	ph.frontier, ph.committedTo = 0, 0
	return nil
}

// commitMeta makes the pagemap words and the span structs that region r
// needs usable. Called with mu held, before r is published.
func (ph *pageHeap) commitMeta(r *region) error {
	end := uint64(r.first) + uint64(r.pages)
	if err := commitRange(ph.pmap, uintptr(r.first)*8, uintptr(end)*8); err != nil {
		return err
	}
	// Every span has at least minSpan pages, so the spans live at once
	// are at most the virtual pages so far over minSpan.
	spans := uint32(end/ph.minSpan + 1)
	if spans > ph.maxSpan {
		sz := uintptr(spanBytes)
		if err := commitRange(ph.spans, uintptr(ph.maxSpan+1)*sz, uintptr(spans+1)*sz); err != nil {
			return err
		}
		ph.maxSpan = spans
	}
	return nil
}

// commitRange commits bytes [from, to) of the reservation at base, widened
// to whole system pages.
func commitRange(base unsafe.Pointer, from, to uintptr) error {
	ps := osmem.PageSize
	from &^= ps - 1
	to = (to + ps - 1) &^ (ps - 1)
	return osmem.Commit(unsafe.Add(base, from), to-from)
}

// pageOf is the virtual page that holds address a, and false if no region of
// the heap holds a. Safe without mu.
func (ph *pageHeap) pageOf(a uintptr) (uint32, bool) {
	if off := a - ph.base; off < ph.size {
		return uint32(off >> pageShift), true
	}
	return ph.pageOfFar(a)
}

// pageOfFar is pageOf for an address outside region 0.
func (ph *pageHeap) pageOfFar(a uintptr) (uint32, bool) {
	r := ph.regions.Load().byAddress(a)
	if r == nil {
		return 0, false
	}
	return r.first + uint32((a-r.base)>>pageShift), true
}

// contains reports whether a region of the heap holds address a.
func (ph *pageHeap) contains(a uintptr) bool {
	_, ok := ph.pageOf(a)
	return ok
}

// addr is the address of virtual page p, a page of some region.
func (ph *pageHeap) addr(p uint32) uintptr {
	if p < ph.pages0 {
		return ph.base + uintptr(p)<<pageShift
	}
	r := ph.regions.Load().byPageNum(p)
	return r.base + uintptr(p-r.first)<<pageShift
}

// region is the region that holds virtual page p.
func (ph *pageHeap) region(p uint32) *region {
	return ph.regions.Load().byPageNum(p)
}

// unmap gives back every region, its record table and the metadata. Called
// by Close, once nothing can use the heap.
func (ph *pageHeap) unmap() error {
	var errs []error
	for _, r := range ph.regions.Load().byPage {
		errs = append(errs, unmapRegion(ptr(r.base), r.bytes))
		if r.shadow != nil {
			errs = append(errs, osmem.Unmap(r.shadow, r.bytes))
		}
	}
	errs = append(errs, osmem.Unmap(ph.pmap, ph.metaBytes))
	return errors.Join(errs...)
}
