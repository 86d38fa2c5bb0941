package pageheap

// Runs of their own: a large block (classLarge), an arena's chunk or per-P
// array (classArena: arena.go's), a guarded block with its guard page
// (classGuarded: guard.go's) and a block the profile sampled (classSampled:
// profile.go's) each take a run of whole pages, its class in every page's
// word. The census counts every such run as a large block
// (Stats.Large, and InUseBytes by pages) from allocRun to freeRun: these
// and keepRun and reuseRun are the only writers of that census.

// AllocRun takes a run of np pages marked class, aligned to align pages (a
// power of two, at most osPagePages), and counts it. It reports whether
// any of its pages may hold old bytes; the others read as zeros.
func (ph *Heap) AllocRun(np, align uint32, class uint8) (a uintptr, dirty bool, err error) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	if ph.closed {
		return 0, false, ErrClosed
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
	return ph.Addr(first), d > 0, nil
}

// FreeRun gives back the run of class that starts at a, counted freed, and
// reports false, changing nothing, if a does not start one.
func (ph *Heap) FreeRun(a uintptr, class uint8) bool {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	page, ok := ph.runAt(a, class)
	if !ok {
		return false
	}
	np := WordPages(*ph.Entry(page))
	ph.release(page, np)
	ph.uncountRun(np)
	return true
}

// runAt is the first page of the run of class that starts at a, or false if
// no such run starts at a. Exact for a run the caller holds; a snapshot
// otherwise, unless Mu is held.
func (ph *Heap) runAt(a uintptr, class uint8) (uint32, bool) {
	page, ok := ph.PageOf(a)
	if !ok || a&(PageSize-1) != 0 {
		return 0, false
	}
	e := *ph.Entry(page)
	return page, WordClass(e) == class && WordRunStart(e)
}

// RunHolding finds the run of its own that holds address a: its first
// byte and its length in pages. Under Mu, so that the run cannot change
// meanwhile (the checker's reports, Lookup).
func (ph *Heap) RunHolding(a uintptr) (first uintptr, pages uint32, ok bool) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	page, ok := ph.PageOf(a)
	if !ok || ph.closed {
		return 0, 0, false
	}
	e := *ph.Entry(page)
	switch WordClass(e) {
	case ClassLarge, ClassArena, ClassGuarded, ClassSampled:
	default:
		return 0, 0, false
	}
	for !WordRunStart(e) && page > 0 {
		page--
		e = *ph.Entry(page)
	}
	return ph.Addr(page), WordPages(e), true
}

// InUse calls f with the first page and the pagemap word of every span and
// every run of its own in use, with Mu held: f must not call the page heap.
// For a checked heap's Close, once nothing else can change the page heap.
func (ph *Heap) InUse(f func(page uint32, e uint64)) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	rs := ph.Regions.Load().ByPage
	for i, r := range rs {
		end := r.First + r.Pages
		if i == len(rs)-1 {
			end = r.First + ph.Frontier // the rest was never used
		}
		for p := r.First; p < end; {
			if fr, ok := ph.Free[p]; ok {
				p += fr.Pages
				continue
			}
			e := *ph.Entry(p)
			n := uint32(1)
			switch cl := WordClass(e); {
			case cl == 0 || !WordRunStart(e): // free, or not a first page
			case int(cl) < len(ph.spanPages):
				f(p, e)
				n = uint32(ph.spanPages[cl])
			default:
				f(p, e)
				n = max(WordPages(e), 1)
			}
			p += n
		}
	}
}

// RunPages is the length in pages of the run that starts at a, which the
// caller holds.
func (ph *Heap) RunPages(a uintptr) uint32 {
	page, _ := ph.PageOf(a)
	return WordPages(*ph.Entry(page))
}

// KeepRun counts a run of np pages freed while its owner keeps it out of
// the free set, marked as it is, to use again (the guarded blocks' spare runs);
// reuseRun counts it allocated again, and dropRun gives the kept run that
// starts at a to the free set.
func (ph *Heap) KeepRun(np uint32) {
	ph.Mu.Lock()
	ph.uncountRun(np)
	ph.Mu.Unlock()
}

// ReuseRun counts a kept run of np pages allocated again, or returns
// ErrClosed once Close has unmapped it.
func (ph *Heap) ReuseRun(np uint32) error {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	if ph.closed { // Close unmapped it
		return ErrClosed
	}
	ph.countRun(np)
	return nil
}

// DropRun gives the kept run that starts at a to the free set.
func (ph *Heap) DropRun(a uintptr) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	if !ph.closed {
		page, _ := ph.PageOf(a)
		ph.release(page, WordPages(*ph.Entry(page)))
	}
}

// CarveRuns makes the run of n*np pages at a, which the caller allocated
// (allocRun) and holds, n runs of np pages each, as the pagemap and the
// census see them: each then goes back to the page heap by a freeRun of its
// own, and none is counted as allocated, for the caller counts each as it
// hands it out (reuseRun).
func (ph *Heap) CarveRuns(a uintptr, n, np uint32) {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	page, _ := ph.PageOf(a)
	class := WordClass(*ph.Entry(page))
	for i := range n {
		*ph.Entry(page + i*np) = runWord(class, np) // the others' words say "not a first page" already
	}
	ph.largeAllocs.Add(^uint64(0)) // allocRun's count, undone
	ph.LargePages.Add(-uint64(n * np))
}

// countRun and uncountRun add a run of np pages to the census and take it
// out. Called with Mu held.
func (ph *Heap) countRun(np uint32) {
	ph.largeAllocs.Add(1)
	ph.LargePages.Add(uint64(np))
}

func (ph *Heap) uncountRun(np uint32) {
	ph.largeFrees.Add(1)
	ph.LargePages.Add(-uint64(np))
}
