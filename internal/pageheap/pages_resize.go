package pageheap

// The page heap's side of Realloc of a run of its own: whether a run may
// grow where it stands, its resize in place under Mu, and the release of
// the pages a move left behind. realloc_pages.go decides between them.

// MayExtend reports whether the run of onp pages at a may grow in place:
// the pagemap word of the page after it, read without Mu, is a free page's
// (a hint, which resizeRun checks under Mu). It saves a Realloc that must
// move the lock and its look at the free set (BenchmarkReallocPairs, 1 to
// 16 MiB). False at the end of the run's region, where no run grows.
func (ph *Heap) MayExtend(a uintptr, onp uint32) bool {
	page, ok := ph.PageOf(a)
	if !ok {
		return false
	}
	r := ph.region(page)
	next := page + onp
	return next < r.First+r.Pages && WordClass(*ph.Entry(next)) == 0
}

// ResizeRun makes the run of class from at a, which the caller holds, np
// pages long and of class to, in place: a shorter run's tail goes back to
// the system at once (releaseSoon), a longer one takes the free pages right after it or
// the current region's frontier. It reports whether any page it added may
// hold old bytes, and false, changing nothing, when the pages after the run
// are not to be had (in use, too few, or refused by the Limit).
func (ph *Heap) ResizeRun(a uintptr, from, to uint8, np uint32) (dirty, ok bool) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	page, ok := ph.runAt(a, from)
	if !ok || ph.closed {
		return false, false
	}
	onp := WordPages(*ph.Entry(page))
	switch {
	case np < onp:
		ph.releaseSoon(page+np, onp-np)
		ph.LargePages.Add(-uint64(onp - np))
	case np > onp:
		if dirty, ok = ph.extend(page+onp, np-onp); !ok {
			return false, false
		}
		ph.LargePages.Add(uint64(np - onp))
		ph.noteAlloc(page+onp, np-onp)
	}
	ph.publishMapped()
	ph.markRun(page, np, to)
	return dirty, true
}

// extend takes the n pages at first, the pages right after a run, out of
// the free run that starts there, or commits them at the current region's
// frontier, and reports whether any may hold old bytes; false, changing
// nothing, if they are not free or the Limit refuses them. Called with Mu
// held; the caller marks them.
func (ph *Heap) extend(first, n uint32) (dirty, ok bool) {
	if r, ok := ph.Free[first]; ok && r.Pages >= n {
		d, err := ph.reuse(first, n, r) // the rule alloc's runs follow
		if err != nil {
			return false, false
		}
		ph.split(first, r, n)
		return d > 0, true
	}
	rs := ph.Regions.Load()
	cur := rs.ByPage[len(rs.ByPage)-1]
	if first != cur.First+ph.Frontier || uint64(ph.Frontier)+uint64(n) > uint64(cur.Pages) ||
		(ph.Limit != 0 && ph.mappedPages()+uint64(n) > ph.Limit) {
		return false, false
	}
	if ph.commitAbove(cur, ph.Frontier+n) != nil {
		return false, false
	}
	ph.Frontier += n
	ph.Committed += uint64(n)
	return false, true
}

// markRun writes the pagemap words of a run of its own of np pages at
// first, of class. Called with Mu held.
func (ph *Heap) markRun(first, np uint32, class uint8) {
	*ph.Entry(first) = runWord(class, np)
	for i := uint32(1); i < np; i++ {
		*ph.Entry(first + i) = runTailWord(class)
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
// Called with Mu held.
func (ph *Heap) releaseSoon(first, n uint32) {
	now := ph.Clock()
	t := ph.tickAt(now)
	if ph.delay > 0 && ph.timed() {
		t -= uint32(int64(ph.delay)/ph.tick) + 2
	}
	w := dirtyWord(t)
	ph.noteFree(first, n)
	for i := range n {
		*ph.Entry(first + i) = w
	}
	r := freeRun{Pages: n, oldest: t, dirty: true}
	if ph.delay <= 0 || !ph.timed() {
		ph.releaseRun(first, &r, 0, true)
	}
	ph.addRun(first, n, r)
	if !r.dirty {
		return
	}
	if ph.Timer != nil && ph.TimerAt > now && ph.Timer.Stop() {
		ph.Timer, ph.TimerAt = nil, 0 // armed for later: arm anew, for now
	}
	ph.arm(now, t) // (a timer that could not be stopped is firing: it finds them due)
}

// FreeMoved frees the run at a whose first moved pages movePages emptied:
// those go to the free set clean (they read as zeros and cost no memory),
// the rest dirty, as Free's. The caller held the run.
func (ph *Heap) FreeMoved(a uintptr, moved uint32) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	page, _ := ph.PageOf(a)
	np := WordPages(*ph.Entry(page))
	ph.uncountRun(np)
	if moved < np {
		ph.release(page+moved, np-moved)
	}
	if moved > 0 {
		ph.renewMoved(page, page+moved) // a range moved into before, now empty
		for i := range moved {
			*ph.Entry(page + i) = 0
		}
		ph.Released += uint64(moved)
		ph.noteFree(page, moved)
		ph.noteRelease(page, moved) // a huge page there went with them
		ph.addRun(page, moved, freeRun{})
		ph.publishMapped()
	}
}
