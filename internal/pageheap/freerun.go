package pageheap

// Free runs and the one rule for their old bytes. A free page is dirty
// (pageDirty in its word: it holds what its last owner wrote, and is counted
// mapped) or clean (given back, or never touched: it reads as zeros, and is
// counted released). A dirty page is either waiting for the release timer
// (freeRun.dirty) or parked, due but sharing an OS page with a page in use
// (freeRun.parked): parked pages hold old bytes as much as any
// dirty page. Every path that takes free pages back into use, a new run
// (Heap.alloc) or a run grown in place over the pages after it
// (Heap.extend), goes through reuse, which reads the pages' own words
// wherever the run may hold either kind, so that what it reports dirty is
// what must be zeroed and what it takes out of the released count is what
// was clean.

// freeRun describes a free run, keyed by its first page.
type freeRun struct {
	Pages  uint32 // its length
	oldest uint32 // at most the tick of every dirty page of the run but the parked
	dirty  bool   // the run may hold dirty pages that are not parked
	Parked bool   // the run may hold parked pages
}

// mayHoldOld reports whether any page of r may hold old bytes: dirty, or
// parked.
func (r freeRun) mayHoldOld() bool { return r.dirty || r.Parked }

// reuse takes the n free pages at first, which free run r described (they
// are out of the free set now, or about to be), into use: it counts the
// dirty ones, parked or not, and moves the others from the released count
// to the mapped one. It returns how many were dirty, or the Limit's
// refusal, changing nothing. Called with Mu held.
func (ph *Heap) reuse(first, n uint32, r freeRun) (dirty uint32, err error) {
	if r.mayHoldOld() {
		for i := range n {
			if wordDirty(*ph.Entry(first + i)) {
				dirty++
			}
		}
	}
	if ph.Limit != 0 && ph.mappedPages()+uint64(n-dirty) > ph.Limit {
		return 0, ph.limitError(n - dirty)
	}
	ph.Released -= uint64(n - dirty)
	return dirty, nil
}

// before reports whether tick a comes before tick b: ticks are compared
// modulo 2^32, which is exact while they are less than 2^31 ticks apart.
func before(a, b uint32) bool { return int32(a-b) < 0 }

// merged describes the union of the pages of two free runs.
func merged(a, b freeRun) freeRun {
	r := a
	switch {
	case !a.dirty:
		r = b
	case !b.dirty:
	case before(b.oldest, a.oldest):
		r = b
	}
	r.Parked = a.Parked || b.Parked
	return r
}
