package pageheap

import "math/bits"

// Placement for huge pages (Options.HugePages), after Temeraire's filler
// (tcmalloc's HugePageFiller): a span or a run of fewer pages than a huge
// page goes into the fullest huge-page range that already holds allocated
// pages and has a free run to take it, before any run of an entirely free
// range and before the frontier. Ranges then fill up, and free memory
// gathers in whole free ranges, which the release timer gives back whole,
// where first fit by length leaves a few pages allocated in
// many ranges, each of which keeps its whole huge page mapped. A run of a
// huge page or more starts on a range's first page where a free run or the
// frontier allows, so that it covers whole ranges of its own and shares at
// most its last range.
//
// The page heap counts the allocated pages of every range (of the ranges
// hugeRange knows: not a region's partial last stretch) in hugeFill, and
// keeps each range with some but not all of its pages allocated in the list
// of its count, so that the fullest is found without a scan of the heap.
// Within the chosen range the free runs are found by a walk of its pagemap
// words, span to span and run to run, and the shortest that holds the
// request is taken. A range whose free pages lie in runs too short is passed
// over; after fillTries of those the request is placed by length alone
// (takeRun), as with huge pages off.

// fillTries bounds the ranges one request looks in, so that a heap of many
// ranges with scattered free pages does not make every span's allocation
// walk them all.
const fillTries = 8

// hugeFill is the count of allocated pages by range. Guarded by
// Heap.Mu.
type hugeFill struct {
	At map[uint32]fillSlot // by range (first page): ranges with a page allocated
	// ByUsed lists the ranges with u pages allocated, for 0 < u <
	// hugeSpan, in any order; fillSlot.idx is a range's place in its list.
	ByUsed [HugeSpan][]uint32
	// some has bit u set while byUsed[u] is not empty.
	some [HugeSpan / 64]uint64
}

// fillSlot is a range's count of allocated pages and its place in the
// list of that count.
type fillSlot struct {
	Used uint32 // pages of the range in use
	Idx  uint32 // the range's place in its list
}

// fillCount adds the n pages at first to the allocated pages of their
// ranges, or takes them away (!add). Called with Mu held, for huge pages
// on.
func (ph *Heap) fillCount(first, n uint32, add bool) {
	r := ph.region(first)
	for p, end := first, first+n; p < end; {
		k, ok := HugeRange(r, p)
		next := k + HugeSpan
		if ok {
			ph.Huge.Fill.move(k, min(next, end)-p, add)
		}
		p = next
	}
}

// move changes range k's count by d pages, up or down, and moves it to the
// list of its new count.
func (f *hugeFill) move(k, d uint32, add bool) {
	s, ok := f.At[k]
	if ok && s.Used < HugeSpan {
		f.unlist(s)
	}
	if add {
		s.Used += d
	} else {
		s.Used -= d
	}
	if s.Used == 0 {
		delete(f.At, k)
		return
	}
	if s.Used < HugeSpan {
		s.Idx = uint32(len(f.ByUsed[s.Used]))
		f.ByUsed[s.Used] = append(f.ByUsed[s.Used], k)
		f.some[s.Used/64] |= 1 << (s.Used % 64)
	}
	f.At[k] = s
}

// unlist takes the range in slot s out of its list: the last of the list
// takes its place.
func (f *hugeFill) unlist(s fillSlot) {
	l := f.ByUsed[s.Used]
	last := l[len(l)-1]
	l[s.Idx] = last
	if m := f.At[last]; m.Idx != s.Idx {
		m.Idx = s.Idx
		f.At[last] = m
	}
	f.ByUsed[s.Used] = l[:len(l)-1]
	if len(l) == 1 {
		f.some[s.Used/64] &^= 1 << (s.Used % 64)
	}
}

// fullest returns the highest count below u with a range listed, or 0.
func (f *hugeFill) fullest(u uint32) uint32 {
	for u > 1 {
		u--
		w := f.some[u/64] & (2<<(u%64) - 1) // counts u%64 and below, of this word
		if w != 0 {
			return u&^63 + uint32(bits.Len64(w)) - 1
		}
		u &^= 63
	}
	return 0
}

// takeHuge is takeRun for huge pages on: a run of fewer pages than a huge
// page from the fullest partly used range that has room (above), one of a
// huge page or more from a free run that holds it from a range's first
// page on; false when neither is found. Called with Mu held.
func (ph *Heap) takeHuge(n, align uint32) (uint32, freeRun, bool) {
	if n >= HugeSpan {
		return ph.takeAligned(n, max(align, HugeSpan))
	}
	f := &ph.Huge.Fill
	tries := 0
	for u := f.fullest(HugeSpan); u > 0 && HugeSpan-u >= n; u = f.fullest(u) {
		for _, k := range f.ByUsed[u] {
			if first, at, ok := ph.fitIn(k, n, align); ok {
				return at, ph.carve(first, at, n), true
			}
			if tries++; tries == fillTries {
				return 0, freeRun{}, false
			}
		}
	}
	return 0, freeRun{}, false
}

// fitIn finds, in range k, the free run whose pages within the range are
// fewest and hold n pages from a multiple of align on: it returns the
// run's first page (which may lie before k) and that multiple. Called with
// Mu held.
func (ph *Heap) fitIn(k, n, align uint32) (first, at uint32, ok bool) {
	end := k + HugeSpan
	if rs := ph.Regions.Load(); k >= rs.ByPage[len(rs.ByPage)-1].First {
		end = min(end, rs.ByPage[len(rs.ByPage)-1].First+ph.Frontier) // never used above
	}
	best := uint32(HugeSpan + 1)
	consider := func(s, pages uint32) { // the free run of pages at s
		from, to := max(s, k), min(s+pages, end)
		if a := (from + align - 1) &^ (align - 1); a+n <= to && to-from < best {
			best, first, at, ok = to-from, s, a, true
		}
	}
	for p := k; p < end; {
		if r, starts := ph.Free[p]; starts {
			consider(p, r.Pages)
			p += r.Pages
			continue
		}
		e := *ph.Entry(p)
		cl, idx := WordClass(e), WordIndex(e)
		switch {
		case cl == 0: // within a free run from before k (p == k): to its end
			q := p
			for q < end && WordClass(*ph.Entry(q)) == 0 {
				q++
			}
			if s, starts := ph.freeEnd[q-1]; starts {
				consider(s, ph.Free[s].Pages)
			}
			p = q
		case int(cl) < len(ph.spanPages):
			p += uint32(ph.spanPages[cl]) - idx
		case idx == 0:
			p += max(WordPages(e), 1)
		default: // within a run from before k (p == k)
			p++
		}
	}
	return first, at, ok
}
