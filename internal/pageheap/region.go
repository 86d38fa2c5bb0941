package pageheap

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
// on; they do not overlap; they are created under Heap.Mu and live until
// Close. Nothing else: not their count, their order in memory, their adjacency
// or their size beyond what was asked. mapRegion and unmapRegion are the only
// code that obtains and gives back a region's memory, and commitRegion and
// protectRegion the only code that changes what may access it: reservations of
// the operating system's, or Go memory in race-detector builds. Releasing
// pages (osmem.Release, madvise) works on either.

// MaxVirtPages is the size of the largest virtual page space, 16 TiB: page
// numbers and run lengths are uint32, and a large block's length in pages
// must fit 31 bits (pagesFor). The pagemap for it takes 16 GiB of address
// space and the span array 10 GiB, reserved and not committed; a system that
// refuses that much gets a smaller space (reserve halves it).
const MaxVirtPages = 1 << 31

// RegionGuard is the inaccessible address space a region of the system's
// memory (region_os.go) keeps on either side of it, reserved with it and
// never committed: at least the largest size class (sizeclass.go holds the
// two in step), so that no write running or skipping past a block at the
// region's edge, short of that many bytes, reaches whatever the system maps
// next to it, the heap's metadata included (docs/DESIGN.md, What lives
// where). A multiple of the largest OS page, 64 KiB, and so of
// osPageBytes, so the region stays aligned.
const RegionGuard = 256 << 10

var _ = [1]struct{}{}[RegionGuard%(64<<10)]

// region is one reservation laid into the virtual page space. Immutable once
// published.
type region struct {
	Base  uintptr // first byte, osPageBytes aligned
	Bytes uintptr // bytes reserved: pages << PageShift
	First uint32  // virtual page of base
	Pages uint32  // its pages
	// Shadow is, in a heap with a checker, the region's part of the
	// checker's record table: bytes long, mirroring the region byte for
	// byte. nil otherwise.
	Shadow unsafe.Pointer
}

// HugeSpan is the number of heap pages in a 2 MiB huge page, the only huge
// page size HugePages uses.
const HugeSpan = 2 << 20 >> PageShift

// HugeRange is the first page of the range that holds page p of region r,
// and false if p lies in r's partial last stretch.
func HugeRange(r *region, p uint32) (uint32, bool) {
	k := r.First + (p-r.First)&^(HugeSpan-1)
	return k, k+HugeSpan <= r.First+r.Pages
}

// regionSet is every region of a heap: ByPage in virtual page order (the
// order they were made), byAddr by base address. Replaced whole, never
// changed, so that lookups need no lock.
type regionSet struct {
	ByPage []*region // in the order they were made
	byAddr []*region
}

// ByAddress is the region that holds address a, or nil.
func (rs *regionSet) ByAddress(a uintptr) *region {
	i, found := slices.BinarySearchFunc(rs.byAddr, a, byBase)
	if !found {
		if i == 0 {
			return nil
		}
		i--
	}
	if r := rs.byAddr[i]; a-r.Base < r.Bytes {
		return r
	}
	return nil
}

// byPageNum is the region that holds virtual page p, which must be a page of
// some region (not a gap).
func (rs *regionSet) byPageNum(p uint32) *region {
	i, found := slices.BinarySearchFunc(rs.ByPage, p, byFirst)
	if !found {
		i--
	}
	return rs.ByPage[i]
}

// Holding is the region that holds virtual page p, or nil when p is a gap
// page or lies past every region.
func (rs *regionSet) Holding(p uint32) *region {
	i, found := slices.BinarySearchFunc(rs.ByPage, p, byFirst)
	if !found {
		if i == 0 {
			return nil
		}
		i--
	}
	if r := rs.ByPage[i]; p-r.First < r.Pages {
		return r
	}
	return nil
}

// with returns a new set with r added. r's pages come after every region's.
func (rs *regionSet) with(r *region) *regionSet {
	i, _ := slices.BinarySearchFunc(rs.byAddr, r.Base, byBase)
	return &regionSet{
		ByPage: append(slices.Clip(rs.ByPage), r),
		byAddr: slices.Insert(slices.Clone(rs.byAddr), i, r),
	}
}

func byBase(r *region, a uintptr) int { return cmp.Compare(r.Base, a) }
func byFirst(r *region, p uint32) int { return cmp.Compare(r.First, p) }

// ErrNoMeta is mapShadow's refusal: the record table cannot be mapped.
var ErrNoMeta = errors.New("offheap: checked mode: mapping block metadata failed")

// mapShadow maps a checked heap's part of the record table for a region of
// n bytes (region.shadow), read-write and zero, backed only as records are
// written.
func mapShadow(n uintptr) (unsafe.Pointer, error) {
	p, err := osmem.Map(n)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoMeta, err)
	}
	return p, nil
}

// outOfSpace is the error for an allocation of need bytes that found the
// virtual page space full (err nil) or the system unwilling.
func (ph *Heap) outOfSpace(need uint64, err error) error {
	return &addressSpaceError{need: need, have: uint64(ph.reservedBytes), most: uint64(ph.MaxPages) << PageShift, err: err}
}

// MostBytes is the largest run the heap's address space can hold: its
// virtual page space less the first region and the gap page after it, the
// longest run a later region can have.
func (ph *Heap) MostBytes() uint64 { return uint64(ph.MaxPages-ph.pages0-1) << PageShift }

// regionGrain is the size later regions are rounded up to, so that a heap
// that grows by small allocations makes few regions.
const regionGrain = 64 << 20

// addRegion reserves a region of at least n pages and makes it the current
// one: new pages come from its frontier. What is left of the old current
// region is committed and becomes a free run, so it is used again; should
// the commit fail, those pages are never used. Called with Mu held.
func (ph *Heap) addRegion(n uint32) error {
	rs := ph.Regions.Load()
	last := rs.ByPage[len(rs.ByPage)-1]
	first := uint64(OSPageUp(last.First + last.Pages + 1)) // a gap page at least
	if ph.Huge.On {
		// A range's first page, so that a multiple of hugeSpan in the
		// virtual page space is one in memory.
		first = (first + HugeSpan - 1) &^ (HugeSpan - 1)
	}
	room := uint64(ph.MaxPages) - min(first, uint64(ph.MaxPages))
	n = OSPageUp(n)
	need := uint64(n) << PageShift
	if uint64(n) > room {
		return ph.outOfSpace(need, nil)
	}
	// Grow geometrically (the new region is as large as all before it), so
	// a heap that keeps growing makes few regions, and at least by a grain.
	want := max(need, uint64(ph.reservedBytes), regionGrain)
	want = min(want, room<<PageShift)
	var p unsafe.Pointer
	var err error
	for {
		if p, err = MapRegion(uintptr(want)); err == nil {
			break
		}
		if want == need {
			return ph.outOfSpace(need, err)
		}
		want = max(want/2&^uint64(OSPageBytes-1), need)
	}
	r := &region{Base: uintptr(p), Bytes: uintptr(want), First: uint32(first), Pages: uint32(want >> PageShift)}
	if err := ph.commitMeta(r); err != nil {
		UnmapRegion(p, r.Bytes)
		return err
	}
	if ph.shadowed {
		if r.Shadow, err = mapShadow(r.Bytes); err != nil {
			UnmapRegion(p, r.Bytes)
			return err
		}
	}
	// The rest of the old region becomes a free run of zero pages.
	if tail := last.Pages - ph.Frontier; tail > 0 {
		at := last.First + ph.Frontier
		if ph.commitAbove(last, last.Pages) == nil {
			ph.Committed += uint64(tail)
			ph.Released += uint64(tail)
			ph.addRun(at, tail, freeRun{})
		}
	}
	ph.Regions.Store(rs.with(r))
	ph.reservedBytes += r.Bytes
	ph.Frontier, ph.committedTo = 0, 0
	return nil
}

// commitMeta makes the pagemap words and the span structs that region r
// needs usable. Called with Mu held, before r is published.
func (ph *Heap) commitMeta(r *region) error {
	end := uint64(r.First) + uint64(r.Pages)
	if err := commitRange(ph.Pmap, uintptr(r.First)*8, uintptr(end)*8); err != nil {
		return err
	}
	// Every span has at least minSpan pages, so the spans live at once
	// are at most the virtual pages so far over minSpan.
	spans := uint32(end/ph.minSpan + 1)
	if spans > ph.maxSpan {
		sz := uintptr(SpanBytes)
		if err := commitRange(ph.Spans, uintptr(ph.maxSpan+1)*sz, uintptr(spans+1)*sz); err != nil {
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

// PageOf is the virtual page that holds address a, and false if no region of
// the heap holds a. Safe without Mu.
func (ph *Heap) PageOf(a uintptr) (uint32, bool) {
	if off := a - ph.Base; off < ph.Size {
		return uint32(off >> PageShift), true
	}
	return ph.PageOfFar(a)
}

// PageOfFar is pageOf for an address outside region 0.
func (ph *Heap) PageOfFar(a uintptr) (uint32, bool) {
	r := ph.Regions.Load().ByAddress(a)
	if r == nil {
		return 0, false
	}
	return r.First + uint32((a-r.Base)>>PageShift), true
}

// Contains reports whether a region of the heap holds address a.
func (ph *Heap) Contains(a uintptr) bool {
	_, ok := ph.PageOf(a)
	return ok
}

// Addr is the address of virtual page p, a page of some region.
func (ph *Heap) Addr(p uint32) uintptr {
	if p < ph.pages0 {
		return ph.Base + uintptr(p)<<PageShift
	}
	r := ph.Regions.Load().byPageNum(p)
	return r.Base + uintptr(p-r.First)<<PageShift
}

// region is the region that holds virtual page p.
func (ph *Heap) region(p uint32) *region {
	return ph.Regions.Load().byPageNum(p)
}

// Unmap gives back every region, its record table and the metadata. Called
// by Close, once nothing can use the heap.
func (ph *Heap) Unmap() error {
	var errs []error
	for _, r := range ph.Regions.Load().ByPage {
		errs = append(errs, UnmapRegion(ptr(r.Base), r.Bytes))
		if r.Shadow != nil {
			errs = append(errs, osmem.Unmap(r.Shadow, r.Bytes))
		}
	}
	errs = append(errs, osmem.Unmap(ph.Pmap, ph.MetaBytes))
	return errors.Join(errs...)
}
