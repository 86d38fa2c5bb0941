package pageheap

// The kernel's mappings of the heap's memory. The kernel keeps a process's
// address space as mappings (VMAs), at most vm.max_map_count of them
// (65,530 by default), and merges neighbouring ones that agree in
// protection, flags and, for anonymous memory, in the page offset each page
// was first touched at. A region is one reservation: its committed pages are
// one read-write mapping and the rest one inaccessible, whatever the page
// heap does with them, with two exceptions that split it:
//
//   - Pages Realloc moves with mremap (movePages) keep the offset of the
//     place they were touched at, so the range they move into is a mapping
//     of its own, two more in the kernel's count while it holds them (and
//     Move's emptied source, if it was such a range, stays one). Nothing the
//     page heap does to the pages (madvise included) merges the range again,
//     only a new mapping over it (renewRegion): so every range the heap has
//     moved pages into is recorded (Heap.Moved) until a new mapping
//     replaces it, which it gets when its pages go back to the system
//     (giveBack: the release timer, Trim, the Limit) or move out again
//     (freeMoved). Free and Trim so leave the kernel's count as it was
//     before the moves.
//   - Guard pages, inaccessible inside accessible memory.
//
// A heap makes no new moved range while it records maxMovedRanges: a
// Realloc then copies rather than move, unless the block it moves holds
// such a range already (the move records one range and renews another).
// A range part of which is renewed or moved over stays recorded in pieces,
// each counted, so the count may pass maxMovedRanges until those pieces
// go. A range costs the kernel two mappings at most, and a range renewed
// between two moved ones may stay apart from them (the kernel merges
// anonymous mappings only where they share their anon_vma) until they are
// renewed too: however long a program reallocates, the heap's moves cost
// the process a few dozen mappings more than its regions do, and Free and
// Trim give them back (TestReallocMapsBounded, TestReallocMapsTorture).

// MaxMovedRanges is how many ranges a heap keeps moved pages in at once: a
// few large blocks that keep growing move without a copy, and the process's
// mappings stay within a few dozen of what the regions take.
const MaxMovedRanges = 12

// ClaimMove decides whether n bytes, whole OS pages, move from src to dst
// (both in runs the caller holds) with movePages rather than be copied,
// and if so records dst's range as moved, before the move, so that two
// moves at once cannot both take the last room. A move that then fails
// leaves the range recorded: at worst it is renewed for nothing. The
// kernel replaces whatever mapping dst had, so the moved ranges dst
// overlaps lose those pages.
func (ph *Heap) ClaimMove(dst, src, n uintptr) bool {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	d, _ := ph.PageOf(dst)
	s, _ := ph.PageOf(src)
	np := uint32(n >> PageShift)
	if len(ph.Moved) >= MaxMovedRanges && !ph.movedWithin(s, np) {
		return false
	}
	ph.cutMoved(d, d+np, false)
	ph.Moved = append(ph.Moved, pageRange{d, np})
	ph.scarred = true
	return true
}

// renewFree gives every free run's whole OS pages, all clean once
// releaseAll has run (and none of them in a moved range: giveBack renewed
// those), a new mapping, which merges with its neighbours:
// Trim's, in a heap that has moved pages, so that a range renewed between
// two moved ranges, apart from them since, merges again once its
// neighbours are free. Called with Mu held.
func (ph *Heap) renewFree() {
	for first, r := range ph.Free {
		lo, hi := OSPageUp(first), (first+r.Pages)&^(OSPagePages-1)
		if lo < hi {
			_ = renewRegion(ptr(ph.Addr(lo)), uintptr(hi-lo)<<PageShift)
		}
	}
}

// movedWithin reports whether a moved range lies within the n pages at
// first. Called with Mu held.
func (ph *Heap) movedWithin(first, n uint32) bool {
	for _, m := range ph.Moved {
		if m.first >= first && m.first+m.n <= first+n {
			return true
		}
	}
	return false
}

// renewMoved gives the parts of moved ranges among pages [from, to), free
// and given back (or empty), a new mapping each, and forgets them. Called
// with Mu held.
func (ph *Heap) renewMoved(from, to uint32) {
	ph.cutMoved(from, to, true)
}

// cutMoved takes pages [from, to) out of the moved ranges, renewing the
// part of each it takes if renew: a range it reaches into keeps the pages
// outside [from, to). A part whose renewal fails stays. Called with Mu
// held.
func (ph *Heap) cutMoved(from, to uint32, renew bool) {
	for i := 0; i < len(ph.Moved); {
		m := ph.Moved[i]
		lo, hi := max(m.first, from), min(m.first+m.n, to)
		if lo >= hi {
			i++
			continue
		}
		if renew && renewRegion(ptr(ph.Addr(lo)), uintptr(hi-lo)<<PageShift) != nil {
			i++
			continue
		}
		ph.Moved[i] = ph.Moved[len(ph.Moved)-1]
		ph.Moved = ph.Moved[:len(ph.Moved)-1]
		if m.first < lo {
			ph.Moved = append(ph.Moved, pageRange{m.first, lo - m.first})
		}
		if end := m.first + m.n; hi < end {
			ph.Moved = append(ph.Moved, pageRange{hi, end - hi})
		}
		// The pieces appended are past i or at it: visited again, and
		// outside [from, to).
	}
}
