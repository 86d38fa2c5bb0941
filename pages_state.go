package offheap

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// The page heap owns the heap's address space: regions reserved with mmap,
// laid into one virtual page space and cut into 8 KiB pages.
// Spans of small blocks and large blocks are runs of pages. Every page of
// the earlier regions has been committed (made readable and writable); in
// the current region, the last one made, the pages below the frontier have,
// and the pages above it are untouched: readable and writable up to
// committedTo (commitAbove commits ahead), reservation beyond.
//
// A free run is a maximal run of free committed pages; it never spans two
// regions. Each free page is either dirty (it held data and still costs
// memory) or clean (given back to the operating system with madvise, or
// never touched: it reads as zeros). A freed page stays dirty for
// ReleaseDelay, so that a heap that frees and reallocates does not pay a
// system call each time; then the release timer gives it back.
//
// Every page has one pagemap word, the only structure Free reads without a
// lock; its encoding is pagemap.go's.

const (
	// spanBytes is the size of a span struct in the span array; an
	// assertion beside the struct holds the two equal.
	spanBytes = 32

	// bucketCount is the longest run kept in an exact-length bucket; longer
	// runs are found by a first-fit scan of one list.
	bucketCount = 128
)

// pageRange is the n pages at first.
type pageRange struct{ first, n uint32 }

// pageHeap is the bottom layer.
type pageHeap struct {
	// Set by reserve; read without the lock.
	base      uintptr        // region 0's first byte
	size      uintptr        // region 0's bytes
	pages0    uint32         // region 0's pages
	pmap      unsafe.Pointer // a word per virtual page, off-heap
	spans     unsafe.Pointer // span structs by id, off-heap
	spanPages []uint8        // the pages of each small class's span, by class
	minSpan   uint64         // the fewest pages of a span
	maxPages  uint32         // virtual pages the pagemap has room for
	metaBytes uintptr        // bytes reserved at pmap: the pagemap and the span array
	delay     time.Duration  // how long a free page stays dirty
	tick      int64          // nanoseconds per release tick
	// shadowed: the heap has a checker (checked or sampled), and each region
	// has its part of the checker's record table (region.shadow), mapped
	// with the region and released with its pages.
	shadowed bool
	// regions is every region; replaced whole, under mu.
	regions atomic.Pointer[regionSet]

	// All fields below are guarded by mu.
	mu            sync.Mutex
	clock         func() int64          // nanoseconds since the heap was made
	frontier      uint32                // pages of the current region committed so far
	committedTo   uint32                // pages of the current region readable and writable: frontier or more (commitAbove)
	committed     uint64                // pages committed, all regions
	released      uint64                // committed free pages that are clean
	reservedBytes uintptr               // bytes of all regions
	free          map[uint32]freeRun    // free runs by first page
	freeEnd       map[uint32]uint32     // free runs: last page -> first page
	buckets       [bucketCount][]uint32 // first pages of runs by length; entries may be stale
	long          []uint32              // first pages of runs longer than bucketCount; may be stale
	limit         uint64                // most mapped pages; 0 = no limit
	spanIDs       []uint32              // recycled span ids
	nextSpan      uint32                // next never-used span id (0 is never used)
	maxSpan       uint32                // span ids whose structs are committed
	timer         *time.Timer           // pending release of dirty pages; nil when none
	timerAt       int64                 // when timer fires, by clock
	closed        bool
	huge          hugeState // huge pages (Options.HugePages)

	// The mappings this heap's guard pages hold, and whether Close gave
	// them back: under guardLedger.mu.
	guardHeld   int64
	guardClosed bool
	moved       []pageRange // ranges movePages moved pages into, not yet renewed
	scarred     bool        // pages have moved: Trim renews the free runs

	// The census, written under mu and read without it: large
	// blocks, the pages they hold, and mapped, which is mappedPages() in
	// bytes, stored wherever frontier or released change.
	largeAllocs, largeFrees atomic.Uint64
	largePages              atomic.Uint64
	mapped                  atomic.Uint64
}

// metaBytes is the size of the metadata reservation for a virtual space of
// pages pages: a pagemap word per page, then a span struct for each
// minSpan pages, the shortest span (and id 0, never used).
func metaBytes(pages, minSpan uint64) uintptr {
	n := uintptr(pages)*8 + uintptr(pages/minSpan+2)*spanBytes
	return (n + osmem.PageSize - 1) &^ (osmem.PageSize - 1)
}

func (ph *pageHeap) entry(page uint32) *uint64 {
	return (*uint64)(unsafe.Add(ph.pmap, uintptr(page)*8))
}

// alignUp rounds x up to a multiple of the power of two align.
func alignUp(x, align uintptr) uintptr {
	return (x + align - 1) &^ (align - 1)
}

// mappedPages is the number of pages that cost memory now: committed and not
// clean. Called with mu held.
func (ph *pageHeap) mappedPages() uint64 { return ph.committed - ph.released }

// publishMapped stores mappedPages() in bytes for readers without the lock,
// and, when that changed, tells mappedChanged. Called with mu held wherever
// committed or released change.
func (ph *pageHeap) publishMapped() {
	v := uint64(ph.mappedPages()) << pageShift
	if ph.mapped.Swap(v) != v && mappedChanged != nil {
		mappedChanged()
	}
}

// runCounts is the runs of their own (large blocks, arena chunks,
// samples) allocated and freed, and the pages of those in use: atomics,
// read without mu in that order.
func (ph *pageHeap) runCounts() (allocs, frees, pages uint64) {
	return ph.largeAllocs.Load(), ph.largeFrees.Load(), ph.largePages.Load()
}

// pageCensus is the page heap's part of the heap's census: the runs of
// their own (large blocks, arena chunks, guarded and sampled blocks)
// allocated and freed and the pages of those in use, and the bytes mapped
// and released, which stay 0 once the heap is closed.
type pageCensus struct {
	runAllocs, runFrees, runPages uint64
	mapped, released              uint64
}

// census is the page heap's census, read together under mu.
func (ph *pageHeap) census() pageCensus {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	var c pageCensus
	c.runAllocs, c.runFrees, c.runPages = ph.runCounts()
	if !ph.closed {
		c.mapped = ph.mappedPages() << pageShift
		c.released = uint64(ph.released) << pageShift
	}
	return c
}

// mappedChanged, when set, runs after any page heap's mapped bytes change,
// with that heap's mu held: the layers above follow the census through it
// (LimitGoMemory moves the Go runtime's limit). It is set once, by an init
// function, before any heap exists.
var mappedChanged func()

// resident is how many bytes of the committed memory are resident now, in
// whole OS pages (Heap.ResidentBytes), or errClosed.
func (ph *pageHeap) resident() (uint64, error) {
	ph.mu.Lock()
	if ph.closed {
		ph.mu.Unlock()
		return 0, errClosed
	}
	// Every region but the current one is committed whole (addRegion
	// commits the rest of the old one); the current one up to its frontier.
	regions := ph.regions.Load().byPage
	frontier := uintptr(ph.frontier) << pageShift
	ph.mu.Unlock()
	var total uint64
	for i, r := range regions {
		n := r.bytes
		if i == len(regions)-1 {
			n = frontier
		}
		b, err := osmem.ResidentBytes(ptr(r.base), n)
		if err != nil {
			return total, err
		}
		total += b
	}
	return total, nil
}
