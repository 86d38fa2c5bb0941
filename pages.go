package offheap

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// The page heap owns the heap's address space: regions reserved with mmap,
// laid into one virtual page space (region.go) and cut into 8 KiB pages.
// Spans of small blocks and large blocks are runs of pages. Every page of
// the earlier regions has been committed (made readable and writable); in
// the current region, the last one made, the pages below the frontier have,
// and the pages above it are untouched reservation.
//
// A free run is a maximal run of free committed pages; it never spans two
// regions. Each free page is either dirty (it held data and still costs
// memory) or clean (given back to the operating system with madvise, or
// never touched: it reads as zeros). A freed page stays dirty for
// ReleaseDelay, so that a heap that frees and reallocates does not pay a
// system call each time; then the release timer gives it back.
//
// Every page has one pagemap word, the only structure Free reads without a
// lock:
//
//	bits  0-7   class: 0 free, 1..numClasses-1 a small span, classLarge a
//	            large block, classGuarded a guarded run (guard.go)
//	bits  8-31  the page's index within its span (small), 0 or 1 (large:
//	            first page or not); on a free page, pageDirty or 0
//	bits 32-63  the span's id (small), the block's page count (large, on
//	            its first page); on a dirty free page, the tick it was freed in
//
// The pagemap changes only under pageHeap.mu, and the word of a page that
// holds a live block does not change until the block is freed, so a Free of
// a live block reads a stable word.
//
// # Release timing
//
// Time is counted in ticks of ReleaseDelay/releaseTicks (at least
// minReleaseTick). A dirty free page's word holds the tick it was freed in,
// whatever runs it has merged with since, and the timer gives back the pages
// of a tick once ReleaseDelay has passed since the tick ended: a page goes
// back between ReleaseDelay and ReleaseDelay plus one tick after its Free,
// plus the timer's own latency. Each free run keeps a lower bound of its
// dirty pages' ticks (freeRun.oldest), so the timer visits only the runs with
// pages due, and it is armed for when the oldest dirty page falls due.

const (
	pageShift = 13
	pageSize  = 1 << pageShift

	classLarge = 0xff
	pageDirty  = 1 << 8 // on a free page: it holds data and is counted as mapped

	// bucketCount is the longest run kept in an exact-length bucket; longer
	// runs are found by a first-fit scan of one list.
	bucketCount = 128

	releaseTicks   = 64
	minReleaseTick = time.Millisecond
)

// freeRun describes a free run, keyed by its first page.
type freeRun struct {
	pages  uint32
	oldest uint32 // at most the tick of every dirty page of the run
	dirty  bool   // the run may hold dirty pages
}

// pageHeap is the bottom layer.
type pageHeap struct {
	// Set by reserve; read without the lock.
	base      uintptr        // region 0's first byte
	size      uintptr        // region 0's bytes
	pages0    uint32         // region 0's pages
	pmap      unsafe.Pointer // a word per virtual page, off-heap
	spans     unsafe.Pointer // span structs by id, off-heap
	maxPages  uint32         // virtual pages the pagemap has room for
	metaBytes uintptr        // bytes reserved at pmap: the pagemap and the span array
	delay     time.Duration  // how long a free page stays dirty
	tick      int64          // nanoseconds per release tick
	// shadowed: the heap is checked, and each region has its part of the
	// checker's record table (region.shadow), released with its pages.
	shadowed bool
	// regions is every region; replaced whole, under mu.
	regions atomic.Pointer[regionSet]

	// All fields below are guarded by mu.
	mu            sync.Mutex
	clock         func() int64          // nanoseconds since the heap was made
	frontier      uint32                // pages of the current region committed so far
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

	// The census, written under mu and read without it (census.go): large
	// blocks, the pages they hold, and mapped, which is mappedPages() in
	// bytes, stored wherever frontier or released change.
	largeAllocs, largeFrees atomic.Uint64
	largePages              atomic.Uint64
	mapped                  atomic.Uint64
}

func (ph *pageHeap) entry(page uint32) *uint64 {
	return (*uint64)(unsafe.Add(ph.pmap, uintptr(page)*8))
}

func (ph *pageHeap) span(id uint32) *span {
	return (*span)(unsafe.Add(ph.spans, uintptr(id)*unsafe.Sizeof(span{})))
}

// mappedPages is the number of pages that cost memory now: committed and not
// clean. Called with mu held.
func (ph *pageHeap) mappedPages() uint64 { return ph.committed - ph.released }

// alloc takes a run of n pages, sets each page's word to mark(i), and reports
// how many of the pages were dirty (their contents are not zero). Called with
// mu held.
func (ph *pageHeap) alloc(n uint32, mark func(i uint32) uint64) (first uint32, dirty uint32, err error) {
	if ph.limit != 0 && ph.mappedPages()+uint64(n) > ph.limit {
		ph.releaseAll() // dirty free pages count against the limit; reuse clean pages instead
	}
	first, r, ok := ph.takeRun(n)
	if ok {
		if r.dirty {
			for i := range n {
				if *ph.entry(first + i)&pageDirty != 0 {
					dirty++
				}
			}
		}
		if ph.limit != 0 && ph.mappedPages()+uint64(n-dirty) > ph.limit {
			ph.addRun(first, n, r)
			return 0, 0, ErrLimit
		}
		ph.released -= uint64(n - dirty)
	} else {
		if ph.limit != 0 && ph.mappedPages()+uint64(n) > ph.limit {
			return 0, 0, ErrLimit
		}
		if first, err = ph.fresh(n); err != nil {
			return 0, 0, err
		}
	}
	ph.publishMapped()
	for i := range n {
		*ph.entry(first + i) = mark(i)
	}
	return first, dirty, nil
}

// fresh commits n never-used pages at the current region's frontier, making
// a new region when they do not fit. Called with mu held.
func (ph *pageHeap) fresh(n uint32) (uint32, error) {
	rs := ph.regions.Load()
	cur := rs.byPage[len(rs.byPage)-1]
	if uint64(ph.frontier)+uint64(n) > uint64(cur.pages) {
		if err := ph.addRegion(n); err != nil {
			return 0, err
		}
		rs = ph.regions.Load()
		cur = rs.byPage[len(rs.byPage)-1]
	}
	first := cur.first + ph.frontier
	if err := commitRegion(ptr(ph.addr(first)), uintptr(n)<<pageShift); err != nil {
		return 0, err
	}
	ph.frontier += n
	ph.committed += uint64(n)
	return first, nil
}

// takeRun removes a free run of at least n pages from the free set, splits
// off the excess, and returns its first page and what is known of its
// pages. Called with mu held.
func (ph *pageHeap) takeRun(n uint32) (uint32, freeRun, bool) {
	for k := n; k < bucketCount; k++ {
		b := ph.buckets[k]
		for len(b) > 0 {
			first := b[len(b)-1]
			b = b[:len(b)-1]
			if r, ok := ph.free[first]; ok && r.pages == k {
				ph.buckets[k] = b
				return first, ph.split(first, r, n), true
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
			return first, ph.split(first, r, n), true
		}
		i++
	}
	return 0, freeRun{}, false
}

// remove takes the free run at first out of the free set (its bucket entry
// goes stale) and returns it.
func (ph *pageHeap) remove(first uint32) freeRun {
	r := ph.free[first]
	delete(ph.free, first)
	delete(ph.freeEnd, first+r.pages-1)
	return r
}

// split removes run r at first from the free set, puts back what is left
// after its first n pages, and returns the description of those n pages.
func (ph *pageHeap) split(first uint32, r freeRun, n uint32) freeRun {
	ph.remove(first)
	if r.pages > n {
		rest := r
		rest.pages = r.pages - n
		ph.insertRun(first+n, rest)
	}
	r.pages = n
	return r
}

// insertRun adds free run r at first, whose page words are already set.
func (ph *pageHeap) insertRun(first uint32, r freeRun) {
	ph.free[first] = r
	ph.freeEnd[first+r.pages-1] = first
	if r.pages < bucketCount {
		ph.buckets[r.pages] = append(ph.buckets[r.pages], first)
	} else {
		ph.long = append(ph.long, first)
	}
}

// release returns n pages at first to the free set, dirty, and arms the
// release timer. Called with mu held.
func (ph *pageHeap) release(first, n uint32) {
	now := ph.clock()
	t := ph.tickAt(now)
	w := pageDirty | uint64(t)<<32
	for i := range n {
		*ph.entry(first + i) = w
	}
	r := freeRun{pages: n, oldest: t, dirty: true}
	if ph.delay <= 0 {
		// Every other free page is clean already: release these alone.
		ph.releaseRun(first, &r, 0, true)
		ph.addRun(first, n, r)
		return
	}
	ph.addRun(first, n, r)
	ph.arm(now, t)
}

// addRun adds the n free pages at first, whose words are already set and
// which r describes, to the free set, merged with the free runs on either
// side. The gap page after each region is never free, so no merge crosses
// regions.
func (ph *pageHeap) addRun(first, n uint32, r freeRun) {
	if first > 0 {
		if prev, ok := ph.freeEnd[first-1]; ok {
			p := ph.remove(prev)
			first, n, r = prev, n+p.pages, merged(p, r)
		}
	}
	if _, ok := ph.free[first+n]; ok {
		next := ph.remove(first + n)
		n, r = n+next.pages, merged(r, next)
	}
	r.pages = n
	ph.insertRun(first, r)
}

// merged describes the union of the pages of two free runs.
func merged(a, b freeRun) freeRun {
	switch {
	case !a.dirty:
		return b
	case !b.dirty:
		return a
	case before(b.oldest, a.oldest):
		return b
	}
	return a
}

// before reports whether tick a comes before tick b: ticks are compared
// modulo 2^32, which is exact while they are less than 2^31 ticks apart.
func before(a, b uint32) bool { return int32(a-b) < 0 }

// tickAt is the release tick that holds clock time ns.
func (ph *pageHeap) tickAt(ns int64) uint32 { return uint32(max(ns, 0) / ph.tick) }

// arm makes sure the timer will release the pages freed in tick t, now or
// earlier being the clock's time. Called with mu held.
func (ph *pageHeap) arm(now int64, t uint32) {
	if ph.timer != nil || ph.closed {
		return // an armed timer is due no later than any page freed since
	}
	// Tick t unwrapped (it is at most now's), then its end, then a whole
	// delay on.
	nowT := max(now, 0) / ph.tick
	full := nowT + int64(int32(t-uint32(nowT)))
	ph.timerAt = (full+1)*ph.tick + int64(ph.delay)
	ph.timer = time.AfterFunc(time.Duration(max(ph.timerAt-now, 0)), ph.onTimer)
}

// onTimer releases the pages due and re-arms itself for the oldest dirty
// page left.
func (ph *pageHeap) onTimer() {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.timer, ph.timerAt = nil, 0
	if ph.closed {
		return
	}
	now := ph.clock()
	next, left, failed := ph.releaseDue(ph.tickAt(now-int64(ph.delay)), false)
	if !left {
		return
	}
	ph.arm(now, next)
	if failed && ph.timerAt < now+int64(ph.delay) {
		// madvise refused some pages: try them again a delay later, not at
		// once.
		ph.timer.Reset(ph.delay)
		ph.timerAt = now + int64(ph.delay)
	}
}

// releaseAll releases every dirty page now and returns how many it released.
// Called with mu held.
func (ph *pageHeap) releaseAll() uint64 {
	was := ph.released
	ph.releaseDue(0, true)
	return ph.released - was
}

// releaseDue gives back to the operating system the dirty free pages freed
// before tick cutoff (all of them, if all), and reports the oldest tick of
// the dirty pages left, whether there are any, and whether a release failed.
// Called with mu held.
func (ph *pageHeap) releaseDue(cutoff uint32, all bool) (next uint32, left, failed bool) {
	for first, r := range ph.free {
		if !r.dirty {
			continue
		}
		if all || before(r.oldest, cutoff) {
			failed = !ph.releaseRun(first, &r, cutoff, all) || failed
			ph.free[first] = r
		}
		if r.dirty {
			if !left || before(r.oldest, next) {
				next = r.oldest
			}
			left = true
		}
	}
	ph.publishMapped()
	return next, left, failed
}

// releaseRun gives back the dirty pages of free run r at first that were
// freed before tick cutoff (all, if all), in as few madvise calls as there
// are stretches of them, and brings r's dirty and oldest up to date. It
// reports false if a release failed (those pages stay dirty). Called with
// mu held.
func (ph *pageHeap) releaseRun(first uint32, r *freeRun, cutoff uint32, all bool) bool {
	due := func(e uint64) bool { return e&pageDirty != 0 && (all || before(uint32(e>>32), cutoff)) }
	ok := true
	r.dirty = false
	keep := func(e uint64) {
		if t := uint32(e >> 32); !r.dirty || before(t, r.oldest) {
			r.oldest = t
		}
		r.dirty = true
	}
	for i := uint32(0); i < r.pages; {
		e := *ph.entry(first + i)
		if !due(e) {
			if e&pageDirty != 0 {
				keep(e)
			}
			i++
			continue
		}
		j := i + 1
		for j < r.pages && due(*ph.entry(first + j)) {
			j++
		}
		if err := osmem.Release(ptr(ph.addr(first+i)), uintptr(j-i)<<pageShift); err != nil {
			// The pages stay usable; count them as still mapped.
			for k := i; k < j; k++ {
				keep(*ph.entry(first + k))
			}
			ok = false
		} else {
			for k := i; k < j; k++ {
				*ph.entry(first + k) = 0
			}
			ph.released += uint64(j - i)
			if ph.shadowed { // their records are all none: zero pages say so too
				rg := ph.region(first + i)
				_ = osmem.Release(unsafe.Add(rg.shadow, uintptr(first+i-rg.first)<<pageShift), uintptr(j-i)<<pageShift)
			}
		}
		i = j
	}
	return ok
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
