package offheap

// Runs of their own: a large block (classLarge), an arena's chunk or per-P
// array (classArena: arena.go's), a guarded block with its guard page
// (classGuarded: guard.go's) and a block the profile sampled (classSampled:
// profile.go's) each take a run of whole pages, its class in every page's
// word. The census counts every such run as a large block
// (Stats.Large, and InUseBytes by pages) from allocRun to freeRun: these
// and keepRun and reuseRun are the only writers of that census.

// allocRun takes a run of np pages marked class, aligned to align pages (a
// power of two, at most osPagePages), and counts it. It reports whether
// any of its pages may hold old bytes; the others read as zeros.
func (ph *pageHeap) allocRun(np, align uint32, class uint8) (a uintptr, dirty bool, err error) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if ph.closed {
		return 0, false, errClosed
	}
	first, d, err := ph.alloc(np, align, func(i uint32) uint64 {
		if i == 0 {
			return runWord(class, np)
		}
		return runTailWord(class)
	})
	if err != nil {
		return 0, false, err
	}
	ph.countRun(np)
	return ph.addr(first), d > 0, nil
}

// freeRun gives back the run of class that starts at a, counted freed, and
// reports false, changing nothing, if a does not start one.
func (ph *pageHeap) freeRun(a uintptr, class uint8) bool {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	page, ok := ph.runAt(a, class)
	if !ok {
		return false
	}
	np := wordPages(*ph.entry(page))
	ph.release(page, np)
	ph.uncountRun(np)
	return true
}

// runAt is the first page of the run of class that starts at a, or false if
// no such run starts at a. Exact for a run the caller holds; a snapshot
// otherwise, unless mu is held.
func (ph *pageHeap) runAt(a uintptr, class uint8) (uint32, bool) {
	page, ok := ph.pageOf(a)
	if !ok || a&(pageSize-1) != 0 {
		return 0, false
	}
	e := *ph.entry(page)
	return page, wordClass(e) == class && wordRunStart(e)
}

// runHolding finds the run of its own that holds address a: its first
// byte and its length in pages. Under mu, so that the run cannot change
// meanwhile (the checker's reports, Lookup).
func (ph *pageHeap) runHolding(a uintptr) (first uintptr, pages uint32, ok bool) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	page, ok := ph.pageOf(a)
	if !ok || ph.closed {
		return 0, 0, false
	}
	e := *ph.entry(page)
	switch wordClass(e) {
	case classLarge, classArena, classGuarded, classSampled:
	default:
		return 0, 0, false
	}
	for !wordRunStart(e) && page > 0 {
		page--
		e = *ph.entry(page)
	}
	return ph.addr(page), wordPages(e), true
}

// inUse calls f with the first page and the pagemap word of every span and
// every run of its own in use, with mu held: f must not call the page heap.
// For a checked heap's Close, once nothing else can change the page heap.
func (ph *pageHeap) inUse(f func(page uint32, e uint64)) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	rs := ph.regions.Load().byPage
	for i, r := range rs {
		end := r.first + r.pages
		if i == len(rs)-1 {
			end = r.first + ph.frontier // the rest was never used
		}
		for p := r.first; p < end; {
			if fr, ok := ph.free[p]; ok {
				p += fr.pages
				continue
			}
			e := *ph.entry(p)
			n := uint32(1)
			switch cl := wordClass(e); {
			case cl == 0 || !wordRunStart(e): // free, or not a first page
			case int(cl) < len(ph.spanPages):
				f(p, e)
				n = uint32(ph.spanPages[cl])
			default:
				f(p, e)
				n = max(wordPages(e), 1)
			}
			p += n
		}
	}
}

// runPages is the length in pages of the run that starts at a, which the
// caller holds.
func (ph *pageHeap) runPages(a uintptr) uint32 {
	page, _ := ph.pageOf(a)
	return wordPages(*ph.entry(page))
}

// keepRun counts a run of np pages freed while its owner keeps it out of
// the free set, marked as it is, to use again (the guarded blocks' spare runs);
// reuseRun counts it allocated again, and dropRun gives the kept run that
// starts at a to the free set.
func (ph *pageHeap) keepRun(np uint32) {
	ph.mu.Lock()
	ph.uncountRun(np)
	ph.mu.Unlock()
}

func (ph *pageHeap) reuseRun(np uint32) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if ph.closed { // Close unmapped it
		return errClosed
	}
	ph.countRun(np)
	return nil
}

func (ph *pageHeap) dropRun(a uintptr) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if !ph.closed {
		page, _ := ph.pageOf(a)
		ph.release(page, wordPages(*ph.entry(page)))
	}
}

// carveRuns makes the run of n*np pages at a, which the caller allocated
// (allocRun) and holds, n runs of np pages each, as the pagemap and the
// census see them: each then goes back to the page heap by a freeRun of its
// own, and none is counted as allocated, for the caller counts each as it
// hands it out (reuseRun).
func (ph *pageHeap) carveRuns(a uintptr, n, np uint32) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	page, _ := ph.pageOf(a)
	class := wordClass(*ph.entry(page))
	for i := range n {
		*ph.entry(page + i*np) = runWord(class, np) // the others' words say "not a first page" already
	}
	ph.largeAllocs.Add(^uint64(0)) // allocRun's count, undone
	ph.largePages.Add(-uint64(n * np))
}

// countRun and uncountRun add a run of np pages to the census and take it
// out. Called with mu held.
func (ph *pageHeap) countRun(np uint32) {
	ph.largeAllocs.Add(1)
	ph.largePages.Add(uint64(np))
}

func (ph *pageHeap) uncountRun(np uint32) {
	ph.largeFrees.Add(1)
	ph.largePages.Add(-uint64(np))
}
