package offheap

// The page heap's side of Realloc of a run of its own: whether a run may
// grow where it stands, its resize in place under mu, and the release of
// the pages a move left behind. realloc_pages.go decides between them.

// mayExtend reports whether the run of onp pages at a may grow in place:
// the pagemap word of the page after it, read without mu, is a free page's
// (a hint, which resizeRun checks under mu). It saves a Realloc that must
// move the lock and its look at the free set (BenchmarkReallocPairs, 1 to
// 16 MiB). False at the end of the run's region, where no run grows.
func (ph *pageHeap) mayExtend(a uintptr, onp uint32) bool {
	page, ok := ph.pageOf(a)
	if !ok {
		return false
	}
	r := ph.region(page)
	next := page + onp
	return next < r.first+r.pages && wordClass(*ph.entry(next)) == 0
}

// resizeRun makes the run of class from at a, which the caller holds, np
// pages long and of class to, in place: a shorter run's tail goes back to
// the system at once (releaseSoon), a longer one takes the free pages right after it or
// the current region's frontier. It reports whether any page it added may
// hold old bytes, and false, changing nothing, when the pages after the run
// are not to be had (in use, too few, or refused by the Limit).
func (ph *pageHeap) resizeRun(a uintptr, from, to uint8, np uint32) (dirty, ok bool) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	page, ok := ph.runAt(a, from)
	if !ok || ph.closed {
		return false, false
	}
	onp := wordPages(*ph.entry(page))
	switch {
	case np < onp:
		ph.releaseSoon(page+np, onp-np)
		ph.largePages.Add(-uint64(onp - np))
	case np > onp:
		if dirty, ok = ph.extend(page+onp, np-onp); !ok {
			return false, false
		}
		ph.largePages.Add(uint64(np - onp))
		ph.noteAlloc(page+onp, np-onp)
	}
	ph.publishMapped()
	ph.markRun(page, np, to)
	return dirty, true
}

// extend takes the n pages at first, the pages right after a run, out of
// the free run that starts there, or commits them at the current region's
// frontier, and reports whether any may hold old bytes; false, changing
// nothing, if they are not free or the Limit refuses them. Called with mu
// held; the caller marks them.
func (ph *pageHeap) extend(first, n uint32) (dirty, ok bool) {
	if r, ok := ph.free[first]; ok && r.pages >= n {
		d, err := ph.reuse(first, n, r) // the rule alloc's runs follow
		if err != nil {
			return false, false
		}
		ph.split(first, r, n)
		return d > 0, true
	}
	rs := ph.regions.Load()
	cur := rs.byPage[len(rs.byPage)-1]
	if first != cur.first+ph.frontier || uint64(ph.frontier)+uint64(n) > uint64(cur.pages) ||
		(ph.limit != 0 && ph.mappedPages()+uint64(n) > ph.limit) {
		return false, false
	}
	if ph.commitAbove(cur, ph.frontier+n) != nil {
		return false, false
	}
	ph.frontier += n
	ph.committed += uint64(n)
	return false, true
}

// markRun writes the pagemap words of a run of its own of np pages at
// first, of class. Called with mu held.
func (ph *pageHeap) markRun(first, np uint32, class uint8) {
	*ph.entry(first) = runWord(class, np)
	for i := uint32(1); i < np; i++ {
		*ph.entry(first + i) = runTailWord(class)
	}
}

// releaseSoon gives the n pages at first, which the caller held, to the free
// set due at once: the release timer, fired now, gives them back to the
// system off the caller's goroutine, which pays for marking them as Free
// would and not for the madvise (for a block of many resident pages, more
// than a copy of what it keeps). Their tick is a delay and two ticks before
// now's, modulo 2^32 as ticks are compared (before), so that they are due
// even in a heap younger than ReleaseDelay. Without a timer (a ReleaseDelay
// of 0 or less, or one too long to wait out) they go back here and now.
// Called with mu held.
func (ph *pageHeap) releaseSoon(first, n uint32) {
	now := ph.clock()
	t := ph.tickAt(now)
	if ph.delay > 0 && ph.timed() {
		t -= uint32(int64(ph.delay)/ph.tick) + 2
	}
	w := dirtyWord(t)
	ph.noteFree(first, n)
	for i := range n {
		*ph.entry(first + i) = w
	}
	r := freeRun{pages: n, oldest: t, dirty: true}
	if ph.delay <= 0 || !ph.timed() {
		ph.releaseRun(first, &r, 0, true)
	}
	ph.addRun(first, n, r)
	if !r.dirty {
		return
	}
	if ph.timer != nil && ph.timerAt > now && ph.timer.Stop() {
		ph.timer, ph.timerAt = nil, 0 // armed for later: arm anew, for now
	}
	ph.arm(now, t) // (a timer that could not be stopped is firing: it finds them due)
}

// freeMoved frees the run at a whose first moved pages movePages emptied:
// those go to the free set clean (they read as zeros and cost no memory),
// the rest dirty, as Free's. The caller held the run.
func (ph *pageHeap) freeMoved(a uintptr, moved uint32) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	page, _ := ph.pageOf(a)
	np := wordPages(*ph.entry(page))
	ph.uncountRun(np)
	if moved < np {
		ph.release(page+moved, np-moved)
	}
	if moved > 0 {
		ph.renewMoved(page, page+moved) // a range moved into before, now empty
		for i := range moved {
			*ph.entry(page + i) = 0
		}
		ph.released += uint64(moved)
		ph.noteFree(page, moved)
		ph.noteRelease(page, moved) // a huge page there went with them
		ph.addRun(page, moved, freeRun{})
		ph.publishMapped()
	}
}
