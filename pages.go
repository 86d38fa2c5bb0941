package offheap

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// The page heap owns the heap's address space: one reservation made at
// NewHeap, cut into 8 KiB pages. Spans of small blocks and large blocks are
// runs of pages. Pages below the frontier have been committed (made readable
// and writable) at least once; pages above it are untouched reservation.
//
// A free run is a maximal run of free pages below the frontier. Each free page
// is either dirty (it held data and still costs memory) or released (given
// back to the operating system with madvise; it reads as zeros when touched
// again). Freed runs stay dirty for ReleaseDelay so that a heap that frees and
// reallocates does not pay a system call each time, then a timer releases them.
//
// Every page has one pagemap word, the only structure Free reads without a
// lock:
//
//	bits  0-7   class: 0 free, 1..numClasses-1 a small span, classLarge a large block
//	bits  8-31  the page's index within its span (small), 0 or 1 (large: first page or not)
//	bits 32-63  the span's id (small), the block's page count (large, on its first page)
//
// A free page's word is 0 or pageDirty. The pagemap changes only under
// pageHeap.mu, and the word of a page that holds a live block does not change
// until the block is freed, so a Free of a live block reads a stable word.

const (
	pageShift = 13
	pageSize  = 1 << pageShift

	classLarge = 0xff
	pageDirty  = 1 << 8 // on a free page: it holds data and is counted as mapped

	// bucketCount is the longest run kept in an exact-length bucket; longer
	// runs are found by a first-fit scan of one list.
	bucketCount = 128
)

// freeRun describes a free run, keyed by its first page.
type freeRun struct {
	pages   uint32
	freedAt int64 // when the run was last freed, in nanoseconds since the heap's epoch
	dirty   bool  // at least one page is dirty
}

// pageHeap is the bottom layer. All fields below mu are guarded by it.
type pageHeap struct {
	base   uintptr        // first byte of the reservation
	npages uint32         // reservation size in pages
	pmap   unsafe.Pointer // npages pagemap words, off-heap
	spans  unsafe.Pointer // span structs by id, off-heap
	epoch  time.Time

	mu       sync.Mutex
	frontier uint32                // pages [0, frontier) have been committed
	free     map[uint32]freeRun    // free runs by first page
	freeEnd  map[uint32]uint32     // free runs: last page -> first page
	buckets  [bucketCount][]uint32 // first pages of runs by length; entries may be stale
	long     []uint32              // first pages of runs longer than bucketCount; may be stale
	released uint32                // released pages below the frontier
	limit    uint32                // most mapped pages; 0 = no limit
	spanIDs  []uint32              // recycled span ids
	nextSpan uint32                // next never-used span id (0 is never used)
	maxSpan  uint32                // span ids available
	timer    *time.Timer           // pending release of dirty runs; nil when none
	delay    time.Duration         // how long a free run stays dirty
	closed   bool
	// shadow, in a checked heap, is the checker's record table, which
	// mirrors the address space byte for byte (checked_small.go): the
	// records of released pages are released with them.
	shadow unsafe.Pointer

	// The census, written under mu and read without it (census.go): large
	// blocks, the pages they hold, and mapped, which is mappedPages() in
	// bytes, stored wherever frontier or released change.
	largeAllocs, largeFrees atomic.Uint64
	largePages              atomic.Uint64
	mapped                  atomic.Uint64
}

func (ph *pageHeap) entry(page uintptr) *uint64 {
	return (*uint64)(unsafe.Add(ph.pmap, page*8))
}

func (ph *pageHeap) span(id uint32) *span {
	return (*span)(unsafe.Add(ph.spans, uintptr(id)*unsafe.Sizeof(span{})))
}

func (ph *pageHeap) addr(page uint32) uintptr { return ph.base + uintptr(page)<<pageShift }

// mappedPages is the number of pages that cost memory now: committed and not
// released. Called with mu held.
func (ph *pageHeap) mappedPages() uint32 { return ph.frontier - ph.released }

// alloc takes a run of n pages, sets each page's word to mark(i), and reports
// how many of the pages were dirty (their contents are not zero). Called with
// mu held.
func (ph *pageHeap) alloc(n uint32, mark func(i uint32) uint64) (first uint32, dirty uint32, err error) {
	if ph.limit != 0 && ph.mappedPages()+n > ph.limit {
		ph.releaseAll() // dirty free pages count against the limit; reuse zero pages instead
	}
	first, ok := ph.takeRun(n)
	if ok {
		for i := range n {
			if *ph.entry(uintptr(first + i))&pageDirty != 0 {
				dirty++
			}
		}
		if ph.limit != 0 && ph.mappedPages()+(n-dirty) > ph.limit {
			ph.addRun(first, n, ph.now(), dirty != 0)
			return 0, 0, ErrLimit
		}
		ph.released -= n - dirty
	} else {
		if uint64(ph.frontier)+uint64(n) > uint64(ph.npages) {
			return 0, 0, errAddressSpace
		}
		if ph.limit != 0 && ph.mappedPages()+n > ph.limit {
			return 0, 0, ErrLimit
		}
		first = ph.frontier
		if err := osmem.Commit(ptr(ph.addr(first)), uintptr(n)<<pageShift); err != nil {
			return 0, 0, err
		}
		ph.frontier += n
	}
	ph.publishMapped()
	for i := range n {
		*ph.entry(uintptr(first + i)) = mark(i)
	}
	return first, dirty, nil
}

// takeRun removes a free run of at least n pages from the free set, splits
// off the excess, and returns its first page. Called with mu held.
func (ph *pageHeap) takeRun(n uint32) (uint32, bool) {
	for k := n; k < bucketCount; k++ {
		b := ph.buckets[k]
		for len(b) > 0 {
			first := b[len(b)-1]
			b = b[:len(b)-1]
			if r, ok := ph.free[first]; ok && r.pages == k {
				ph.buckets[k] = b
				ph.split(first, r, n)
				return first, true
			}
		}
		ph.buckets[k] = b
	}
	for i := 0; i < len(ph.long); {
		first := ph.long[i]
		r, ok := ph.free[first]
		if !ok || r.pages < bucketCount {
			ph.long[i] = ph.long[len(ph.long)-1]
			ph.long = ph.long[:len(ph.long)-1]
			continue
		}
		if r.pages >= n {
			ph.long[i] = ph.long[len(ph.long)-1]
			ph.long = ph.long[:len(ph.long)-1]
			ph.split(first, r, n)
			return first, true
		}
		i++
	}
	return 0, false
}

// split removes run r at first from the free set and puts back what is left
// after its first n pages.
func (ph *pageHeap) split(first uint32, r freeRun, n uint32) {
	delete(ph.free, first)
	delete(ph.freeEnd, first+r.pages-1)
	if r.pages > n {
		ph.insertRun(first+n, r.pages-n, r.freedAt, r.dirty)
	}
}

// insertRun adds a free run whose page words are already set.
func (ph *pageHeap) insertRun(first, n uint32, freedAt int64, dirty bool) {
	ph.free[first] = freeRun{pages: n, freedAt: freedAt, dirty: dirty}
	ph.freeEnd[first+n-1] = first
	if n < bucketCount {
		ph.buckets[n] = append(ph.buckets[n], first)
	} else {
		ph.long = append(ph.long, first)
	}
}

// release returns n pages at first to the free set, dirty, and arms the
// release timer. Called with mu held.
func (ph *pageHeap) release(first, n uint32) {
	for i := range n {
		*ph.entry(uintptr(first + i)) = pageDirty
	}
	now := ph.now()
	ph.addRun(first, n, now, true)
	if ph.delay <= 0 {
		ph.releaseOlder(now + 1)
		return
	}
	if ph.timer == nil && !ph.closed {
		ph.timer = time.AfterFunc(ph.delay, ph.onTimer)
	}
}

// addRun adds n free pages at first, whose words are already set, to the
// free set, merged with the free runs on either side.
func (ph *pageHeap) addRun(first, n uint32, freedAt int64, dirty bool) {
	if first > 0 {
		if prev, ok := ph.freeEnd[first-1]; ok {
			r := ph.free[prev]
			ph.split(prev, r, r.pages) // removes it whole
			first, n, dirty = prev, n+r.pages, dirty || r.dirty
		}
	}
	if r, ok := ph.free[first+n]; ok {
		ph.split(first+n, r, r.pages)
		n, dirty = n+r.pages, dirty || r.dirty
	}
	ph.insertRun(first, n, freedAt, dirty)
}

func (ph *pageHeap) now() int64 { return int64(time.Since(ph.epoch)) }

// onTimer releases the runs that have stayed free for the delay and re-arms
// itself while dirty runs remain.
func (ph *pageHeap) onTimer() {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.timer = nil
	if ph.closed {
		return
	}
	if left := ph.releaseOlder(ph.now() - int64(ph.delay)); left {
		ph.timer = time.AfterFunc(ph.delay, ph.onTimer)
	}
}

// releaseAll releases every dirty page now and returns how many it released.
func (ph *pageHeap) releaseAll() uint32 {
	before := ph.released
	ph.releaseOlder(ph.now() + 1)
	return ph.released - before
}

// releaseOlder gives back to the OS the dirty pages of runs freed before
// cutoff, and reports whether dirty runs remain.
func (ph *pageHeap) releaseOlder(cutoff int64) (left bool) {
	for first, r := range ph.free {
		if !r.dirty {
			continue
		}
		if r.freedAt >= cutoff {
			left = true
			continue
		}
		// madvise only the dirty stretches: released pages are already zero.
		for i := uint32(0); i < r.pages; {
			if *ph.entry(uintptr(first + i))&pageDirty == 0 {
				i++
				continue
			}
			j := i
			for j < r.pages && *ph.entry(uintptr(first + j))&pageDirty != 0 {
				*ph.entry(uintptr(first + j)) = 0
				j++
			}
			if err := osmem.Release(ptr(ph.addr(first+i)), uintptr(j-i)<<pageShift); err != nil {
				// The pages stay usable; count them as still mapped.
				for k := i; k < j; k++ {
					*ph.entry(uintptr(first + k)) = pageDirty
				}
				left = true
			} else {
				ph.released += j - i
				if ph.shadow != nil { // their records are all none: zero pages say so too
					_ = osmem.Release(unsafe.Add(ph.shadow, uintptr(first+i)<<pageShift), uintptr(j-i)<<pageShift)
				}
			}
			i = j
		}
		r.dirty = false
		ph.free[first] = r
	}
	ph.publishMapped()
	return left
}

// newSpanID hands out a span struct. Called with mu held.
func (ph *pageHeap) newSpanID() (uint32, bool) {
	if n := len(ph.spanIDs); n > 0 {
		id := ph.spanIDs[n-1]
		ph.spanIDs = ph.spanIDs[:n-1]
		return id, true
	}
	if ph.nextSpan >= ph.maxSpan {
		return 0, false
	}
	ph.nextSpan++
	return ph.nextSpan, true
}
