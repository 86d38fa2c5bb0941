package pageheap

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
	// SpanBytes is the size of a span struct in the span array; an
	// assertion beside the struct holds the two equal.
	SpanBytes = 32

	// bucketCount is the longest run kept in an exact-length bucket; longer
	// runs are found by a first-fit scan of one list.
	bucketCount = 128
)

// pageRange is the n pages at first.
type pageRange struct{ first, n uint32 }

// Heap is the bottom layer.
type Heap struct {
	// Set by reserve; read without the lock.
	Base      uintptr        // region 0's first byte
	Size      uintptr        // region 0's bytes
	pages0    uint32         // region 0's pages
	Pmap      unsafe.Pointer // a word per virtual page, off-heap
	Spans     unsafe.Pointer // span structs by id, off-heap
	spanPages []uint8        // the pages of each small class's span, by class
	minSpan   uint64         // the fewest pages of a span
	MaxPages  uint32         // virtual pages the pagemap has room for
	MetaBytes uintptr        // bytes reserved at pmap: the pagemap and the span array
	delay     time.Duration  // how long a free page stays dirty
	tick      int64          // nanoseconds per release tick
	// shadowed: the heap has a checker (checked or sampled), and each region
	// has its part of the checker's record table (region.shadow), mapped
	// with the region and released with its pages.
	shadowed bool
	// Regions is every region; replaced whole, under Mu.
	Regions atomic.Pointer[regionSet]

	// All fields below are guarded by Mu.
	Mu            sync.Mutex
	Clock         func() int64          // nanoseconds since the heap was made
	Frontier      uint32                // pages of the current region committed so far
	committedTo   uint32                // pages of the current region readable and writable: frontier or more (commitAbove)
	Committed     uint64                // pages committed, all regions
	Released      uint64                // committed free pages that are clean
	reservedBytes uintptr               // bytes of all regions
	Free          map[uint32]freeRun    // free runs by first page
	freeEnd       map[uint32]uint32     // free runs: last page -> first page
	buckets       [bucketCount][]uint32 // first pages of runs by length; entries may be stale
	long          []uint32              // first pages of runs longer than bucketCount; may be stale
	Limit         uint64                // most mapped pages; 0 = no limit
	spanIDs       []uint32              // recycled span ids
	nextSpan      uint32                // next never-used span id (0 is never used)
	maxSpan       uint32                // span ids whose structs are committed
	Timer         *time.Timer           // pending release of dirty pages; nil when none
	TimerAt       int64                 // when timer fires, by clock
	closed        bool
	Huge          hugeState // huge pages (Options.HugePages)

	// The mappings this heap's guard pages hold, and whether Close gave
	// them back: under GuardLedger.Mu.
	guardHeld   int64
	guardClosed bool
	Moved       []pageRange // ranges movePages moved pages into, not yet renewed
	scarred     bool        // pages have moved: Trim renews the free runs

	// The census, written under Mu and read without it: large
	// blocks, the pages they hold, and mapped, which is mappedPages() in
	// bytes, stored wherever frontier or released change.
	largeAllocs, largeFrees atomic.Uint64
	LargePages              atomic.Uint64 // the runs of their own's pages in use
	Mapped                  atomic.Uint64 // mappedPages() in bytes

	// The census above is written by every run's allocation and free
	// (sampled blocks among them, a few in every thousand allocations):
	// this keeps it off the cache line of whatever follows a Heap in its
	// owner, which other cores read on every slow path.
	_ [64]byte
}

// metaBytes is the size of the metadata reservation for a virtual space of
// pages pages: a pagemap word per page, then a span struct for each
// minSpan pages, the shortest span (and id 0, never used).
func metaBytes(pages, minSpan uint64) uintptr {
	n := uintptr(pages)*8 + uintptr(pages/minSpan+2)*SpanBytes
	return (n + osmem.PageSize - 1) &^ (osmem.PageSize - 1)
}

// Entry is the pagemap word of virtual page page.
func (ph *Heap) Entry(page uint32) *uint64 {
	return (*uint64)(unsafe.Add(ph.Pmap, uintptr(page)*8))
}

// AlignUp rounds x up to a multiple of the power of two align.
func AlignUp(x, align uintptr) uintptr {
	return (x + align - 1) &^ (align - 1)
}

// mappedPages is the number of pages that cost memory now: committed and not
// clean. Called with Mu held.
func (ph *Heap) mappedPages() uint64 { return ph.Committed - ph.Released }

// publishMapped stores mappedPages() in bytes for readers without the lock,
// and, when that changed, tells mappedChanged. Called with Mu held wherever
// committed or released change.
func (ph *Heap) publishMapped() {
	v := uint64(ph.mappedPages()) << PageShift
	if ph.Mapped.Swap(v) != v && MappedChanged != nil {
		MappedChanged()
	}
}

// RunCounts is the runs of their own (large blocks, arena chunks,
// samples) allocated and freed, and the pages of those in use: atomics,
// read without Mu in that order.
func (ph *Heap) RunCounts() (allocs, frees, pages uint64) {
	return ph.largeAllocs.Load(), ph.largeFrees.Load(), ph.LargePages.Load()
}

// Census is the page heap's part of the heap's census: the runs of
// their own (large blocks, arena chunks, guarded and sampled blocks)
// allocated and freed and the pages of those in use, and the bytes mapped
// and released, which stay 0 once the heap is closed.
type Census struct {
	RunAllocs, RunFrees, RunPages uint64
	Mapped, Released              uint64
}

// Census is the page heap's census, read together under Mu.
func (ph *Heap) Census() Census {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	var c Census
	c.RunAllocs, c.RunFrees, c.RunPages = ph.RunCounts()
	if !ph.closed {
		c.Mapped = ph.mappedPages() << PageShift
		c.Released = uint64(ph.Released) << PageShift
	}
	return c
}

// MappedChanged, when set, runs after any page heap's mapped bytes change,
// with that heap's Mu held: the layers above follow the census through it
// (LimitGoMemory moves the Go runtime's limit). It is set once, by an init
// function, before any heap exists.
var MappedChanged func()

// Resident is how many bytes of the committed memory are resident now, in
// whole OS pages (Heap.ResidentBytes), or ErrClosed.
func (ph *Heap) Resident() (uint64, error) {
	ph.Mu.Lock()
	if ph.closed {
		ph.Mu.Unlock()
		return 0, ErrClosed
	}
	// Every region but the current one is committed whole (addRegion
	// commits the rest of the old one); the current one up to its frontier.
	regions := ph.Regions.Load().ByPage
	frontier := uintptr(ph.Frontier) << PageShift
	ph.Mu.Unlock()
	var total uint64
	for i, r := range regions {
		n := r.Bytes
		if i == len(regions)-1 {
			n = frontier
		}
		b, err := osmem.ResidentBytes(ptr(r.Base), n)
		if err != nil {
			return total, err
		}
		total += b
	}
	return total, nil
}
