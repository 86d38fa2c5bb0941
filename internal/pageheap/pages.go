package pageheap

import "slices"

// The free set of page runs: alloc and release of runs, and the rules by
// which a run is taken, split and merged (the page heap's state and the
// invariants it keeps are pages_state.go's).

// alloc takes a run of n pages whose first page is a multiple of align (a
// power of two, at most osPagePages: its address is then aligned to align
// pages), sets each page's word to mark(i), and reports how many of the
// pages were dirty (their contents are not zero). Called with Mu held.
//
// A run of an OS page or more starts on an OS page whatever the caller
// asks, so that it shares no OS page with the run before it,
// and once freed leaves no page parked but in the OS page of its last
// page: with 64 KiB pages, after churn and Trim, a heap then keeps less
// than one with 64 KiB heap pages would, where runs placed anywhere kept
// more (BenchmarkTrimResident; docs/DESIGN.md, OS pages).
// With OS pages of 8 KiB or less every run qualifies, and align is 1.
func (ph *Heap) alloc(n, align uint32, mark func(i uint32) uint64) (first uint32, dirty uint32, err error) {
	if ph.Limit != 0 && ph.mappedPages()+uint64(n) > ph.Limit {
		ph.releaseAll() // dirty free pages count against the limit; reuse clean pages instead
	}
	if n >= OSPagePages {
		align = max(align, OSPagePages)
	}
	first, r, ok := ph.takeRun(n, align)
	if ok {
		if dirty, err = ph.reuse(first, n, r); err != nil {
			ph.addRun(first, n, r)
			return 0, 0, err
		}
	} else {
		if ph.Limit != 0 && ph.mappedPages()+uint64(n) > ph.Limit {
			return 0, 0, ph.limitError(n)
		}
		if ph.Huge.On && n >= HugeSpan {
			align = HugeSpan // whole ranges of its own
		}
		if first, err = ph.fresh(n, align); err != nil {
			return 0, 0, err
		}
	}
	ph.publishMapped()
	for i := range n {
		*ph.Entry(first + i) = mark(i)
	}
	ph.noteAlloc(first, n)
	return first, dirty, nil
}

// fresh commits n never-used pages at the current region's frontier, the
// first a multiple of align, making a new region when they do not fit. The
// pages the alignment skips become a free run of zero pages. Called with Mu
// held.
func (ph *Heap) fresh(n, align uint32) (uint32, error) {
	rs := ph.Regions.Load()
	cur := rs.ByPage[len(rs.ByPage)-1]
	skip := -(cur.First + ph.Frontier) & (align - 1)
	if uint64(ph.Frontier)+uint64(skip)+uint64(n) > uint64(cur.Pages) {
		if err := ph.addRegion(n + align - 1); err != nil {
			return 0, err
		}
		rs = ph.Regions.Load()
		cur = rs.ByPage[len(rs.ByPage)-1]
		skip = -cur.First & (align - 1)
	}
	if skip > 0 {
		at := cur.First + ph.Frontier
		if err := ph.commitAbove(cur, ph.Frontier+skip); err != nil {
			return 0, err
		}
		ph.Frontier += skip
		ph.Committed += uint64(skip)
		ph.Released += uint64(skip)
		ph.addRun(at, skip, freeRun{})
	}
	first := cur.First + ph.Frontier
	if err := ph.commitAbove(cur, ph.Frontier+n); err != nil {
		return 0, err
	}
	ph.Frontier += n
	ph.Committed += uint64(n)
	return first, nil
}

// commitAbove makes the pages of the current region r up to page to (of
// r's) readable and writable, if they are not (committedTo). It commits
// ahead, an eighth of what r has committed and at least commitAhead pages,
// within r: each commit is an mprotect, which holds the process's mmap lock
// for writing and so stalls every page fault of the process meanwhile, and
// a heap growing a run at a time (a cache loading a snapshot: 960 calls for
// 550 MiB) would stall its own writers once per run. The pages committed
// ahead are address space only, untouched and not counted as mapped until
// the frontier reaches them; where the system refuses them, only the
// pages needed are committed. Called with Mu held.
func (ph *Heap) commitAbove(r *region, to uint32) error {
	from, to := ph.committedTo, OSPageUp(to)
	if to <= from {
		return nil
	}
	ahead := min(r.Pages&^(OSPagePages-1), max(to, OSPageUp(from+max(from/8, CommitAhead))))
	if ahead > to && CommitRegion(ptr(r.Base+uintptr(from)<<PageShift), uintptr(ahead-from)<<PageShift) == nil {
		ph.committedTo = ahead
		return nil
	}
	if err := CommitRegion(ptr(r.Base+uintptr(from)<<PageShift), uintptr(to-from)<<PageShift); err != nil {
		return err
	}
	ph.committedTo = to
	return nil
}

// CommitAhead is the least commitAbove commits past what it needs, in heap
// pages: 2 MiB.
const CommitAhead = 2 << 20 >> PageShift

// takeRun removes a free run of at least n pages from the free set, splits
// off the excess, and returns its first page and what is known of its
// pages; the first page is a multiple of align. With huge pages on it
// looks first where takeHuge places; otherwise, and where
// that finds nothing, it takes the shortest run that holds n pages. Called
// with Mu held.
func (ph *Heap) takeRun(n, align uint32) (uint32, freeRun, bool) {
	if ph.Huge.On {
		if first, r, ok := ph.takeHuge(n, align); ok {
			return first, r, true
		}
	}
	if align > 1 {
		return ph.takeAligned(n, align)
	}
	for k := n; k < bucketCount; k++ {
		b := ph.buckets[k]
		for len(b) > 0 {
			first := b[len(b)-1]
			b = b[:len(b)-1]
			if r, ok := ph.Free[first]; ok && r.Pages == k {
				ph.buckets[k] = b
				return first, ph.split(first, r, n), true
			}
		}
		ph.buckets[k] = b
	}
	for i := 0; i < len(ph.long); {
		first := ph.long[i]
		r, ok := ph.Free[first]
		if !ok || r.Pages < bucketCount {
			ph.long[i] = ph.long[len(ph.long)-1]
			ph.long = ph.long[:len(ph.long)-1]
			continue
		}
		if r.Pages >= n {
			ph.long[i] = ph.long[len(ph.long)-1]
			ph.long = ph.long[:len(ph.long)-1]
			return first, ph.split(first, r, n), true
		}
		i++
	}
	return 0, freeRun{}, false
}

// takeAligned is takeRun for align > 1: the first free run, shortest
// first, that holds n pages from a multiple of align on, less its pages
// before those and after, which stay free. It drops the stale entries it
// meets, as takeRun does.
func (ph *Heap) takeAligned(n, align uint32) (uint32, freeRun, bool) {
	up := func(p uint32) uint32 { return (p + align - 1) &^ (align - 1) }
	// find drops the stale entries of b, a list of runs of k pages (of
	// bucketCount or more, for the long list), and returns what is left and
	// the index of the last entry whose run holds the n pages, or -1.
	find := func(b []uint32, k uint32) ([]uint32, int) {
		for i := len(b) - 1; i >= 0; i-- {
			if ph.stale(b[i], k) {
				b[i] = b[len(b)-1] // its run is gone or has another length
				b = b[:len(b)-1]
				continue
			}
			if uint64(up(b[i]))+uint64(n) <= uint64(b[i])+uint64(ph.Free[b[i]].Pages) {
				return b, i
			}
		}
		return b, -1
	}
	for k := min(n, bucketCount); k <= bucketCount; k++ {
		list := &ph.long
		if k < bucketCount {
			list = &ph.buckets[k]
		}
		b, i := find(*list, k)
		if i < 0 {
			*list = b
			continue
		}
		first := b[i]
		b[i] = b[len(b)-1]
		*list = b[:len(b)-1]
		return up(first), ph.carve(first, up(first), n), true
	}
	return 0, freeRun{}, false
}

// carve takes the n pages at at out of the free run at first, which holds
// them, and returns their description; the run's pages before and after
// them stay free.
func (ph *Heap) carve(first, at, n uint32) freeRun {
	r := ph.remove(first)
	if at > first {
		head := r
		head.Pages = at - first
		ph.insertRun(first, head)
	}
	if rest := first + r.Pages - (at + n); rest > 0 {
		tail := r
		tail.Pages = rest
		ph.insertRun(at+n, tail)
	}
	r.Pages = n
	return r
}

// remove takes the free run at first out of the free set (its bucket entry
// goes stale) and returns it.
func (ph *Heap) remove(first uint32) freeRun {
	r := ph.Free[first]
	delete(ph.Free, first)
	delete(ph.freeEnd, first+r.Pages-1)
	return r
}

// split removes run r at first from the free set, puts back what is left
// after its first n pages, and returns the description of those n pages.
func (ph *Heap) split(first uint32, r freeRun, n uint32) freeRun {
	ph.remove(first)
	if r.Pages > n {
		rest := r
		rest.Pages = r.Pages - n
		ph.insertRun(first+n, rest)
	}
	r.Pages = n
	return r
}

// insertRun adds free run r at first, whose page words are already set.
func (ph *Heap) insertRun(first uint32, r freeRun) {
	ph.Free[first] = r
	ph.freeEnd[first+r.Pages-1] = first
	list, k := &ph.long, uint32(bucketCount)
	if r.Pages < bucketCount {
		list, k = &ph.buckets[r.Pages], r.Pages
	}
	if len(*list) == cap(*list) && len(*list) >= 64 {
		ph.dropStale(list, k)
	}
	*list = append(*list, first)
}

// dropStale drops the stale entries of a list of runs of k pages (of
// bucketCount or more, for the long list) and keeps the order of the
// others. insertRun calls it when the list is full, before append would
// grow it: an entry goes stale when its run is taken other than by a scan
// of its list (takeAligned, takeHuge), so a list no scan reaches would
// otherwise grow with every run freed. It leaves room for as many entries
// as it keeps, so that the next call is as many appends away: amortized, a
// constant cost per entry.
func (ph *Heap) dropStale(list *[]uint32, k uint32) {
	*list = slices.DeleteFunc(*list, func(first uint32) bool { return ph.stale(first, k) })
	*list = slices.Grow(*list, len(*list))
}

// stale reports whether the entry first of a list of runs of k pages (of
// bucketCount or more, for the long list) names no such free run.
func (ph *Heap) stale(first, k uint32) bool {
	r, ok := ph.Free[first]
	return !ok || (k < bucketCount && r.Pages != k) || (k == bucketCount && r.Pages < k)
}

// release returns n pages at first to the free set, dirty, and arms the
// release timer. Called with Mu held.
func (ph *Heap) release(first, n uint32) {
	now := ph.Clock()
	t := ph.tickAt(now)
	w := dirtyWord(t)
	for i := range n {
		*ph.Entry(first + i) = w
	}
	ph.noteFree(first, n)
	r := freeRun{Pages: n, oldest: t, dirty: true}
	if ph.delay <= 0 {
		// Every other free page is clean already, or parked: release
		// these alone, with the parked pages of their OS pages.
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
func (ph *Heap) addRun(first, n uint32, r freeRun) {
	if first > 0 {
		if prev, ok := ph.freeEnd[first-1]; ok {
			p := ph.remove(prev)
			first, n, r = prev, n+p.Pages, merged(p, r)
		}
	}
	if _, ok := ph.Free[first+n]; ok {
		next := ph.remove(first + n)
		n, r = n+next.Pages, merged(r, next)
	}
	r.Pages = n
	ph.insertRun(first, r)
}

// limitError is the refusal of n pages more, with Mu held.
func (ph *Heap) limitError(n uint32) error {
	return &limitError{need: uint64(n) << PageShift, mapped: ph.mappedPages() << PageShift, limit: ph.Limit << PageShift}
}
