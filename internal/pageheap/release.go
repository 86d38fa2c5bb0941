package pageheap

import (
	"time"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// Giving free pages back to the operating system: a freed page stays dirty
// for ReleaseDelay, then the release timer hands it back with
// madvise, and Trim and a heap at its Limit hand back every dirty page at
// once (releaseAll).
//
// Time is counted in ticks of ReleaseDelay/releaseTicks (at least
// minReleaseTick). A dirty free page's word holds the tick it was freed in,
// whatever runs it has merged with since, and the timer gives back the pages
// of a tick once ReleaseDelay has passed since the tick ended: a page goes
// back between ReleaseDelay and ReleaseDelay plus one tick after its Free,
// plus the timer's own latency. Each free run keeps a lower bound of its
// dirty pages' ticks (freeRun.oldest), so the timer visits only the runs with
// pages due, and it is armed for when the oldest dirty page falls due.
//
// madvise works on whole OS pages: a page goes back only with
// every other page of its OS page, when each of them is free and either
// clean or due, so that no release reaches a page in use. A due page whose
// OS page also holds a page in use, or a page not yet due, is parked: it
// stays dirty (and counted mapped), but is no reason for the timer to
// come back (freeRun.parked), since only the Free of its OS page's page in
// use can let it go, and that Free makes a dirty page of its own, due no
// earlier, for the timer to come back for. Where an OS page is at most a
// heap page, no page is ever parked.

const (
	ReleaseTicks   = 64 // ticks per ReleaseDelay
	minReleaseTick = time.Millisecond

	// MaxReleaseDelay is the longest ReleaseDelay the timer waits out; a
	// longer one means never (Trim and the Limit still release). The
	// timer's arithmetic, the clock's time plus a tick plus the delay,
	// then stays below 2^63 ns (292 years) for a heap younger than 190
	// years.
	MaxReleaseDelay = 100 * 365 * 24 * time.Hour
)

// timed reports whether the release timer runs: not for a delay past
// maxReleaseDelay.
func (ph *Heap) timed() bool { return ph.delay <= MaxReleaseDelay }

// tickAt is the release tick that holds clock time ns.
func (ph *Heap) tickAt(ns int64) uint32 { return uint32(max(ns, 0) / ph.tick) }

// arm makes sure the timer will release the pages freed in tick t, now or
// earlier being the clock's time. Called with Mu held.
func (ph *Heap) arm(now int64, t uint32) {
	if ph.Timer != nil || ph.closed || !ph.timed() {
		return // an armed timer is due no later than any page freed since
	}
	// Tick t unwrapped (it is at most now's), then its end, then a whole
	// delay on.
	nowT := max(now, 0) / ph.tick
	full := nowT + int64(int32(t-uint32(nowT)))
	ph.TimerAt = (full+1)*ph.tick + int64(ph.delay)
	ph.Timer = time.AfterFunc(time.Duration(max(ph.TimerAt-now, 0)), ph.OnTimer)
}

// OnTimer releases the pages due and re-arms itself for the oldest dirty
// page left.
func (ph *Heap) OnTimer() {
	ph.Mu.Lock()
	defer ph.Mu.Unlock()
	ph.Timer, ph.TimerAt = nil, 0
	if ph.closed || !ph.timed() {
		return
	}
	now := ph.Clock()
	next, left, failed := ph.ReleaseDue(ph.tickAt(now-int64(ph.delay)), false)
	if !left {
		return
	}
	ph.arm(now, next)
	if failed && ph.TimerAt < now+int64(ph.delay) {
		// madvise refused some pages: try them again a delay later, not at
		// once.
		ph.Timer.Reset(ph.delay)
		ph.TimerAt = now + int64(ph.delay)
	}
}

// releaseAll releases every dirty page now and returns how many it released.
// Called with Mu held.
func (ph *Heap) releaseAll() uint64 {
	was := ph.Released
	ph.ReleaseDue(0, true)
	return ph.Released - was
}

// ReleaseDue gives back to the operating system the dirty free pages freed
// before tick cutoff (all of them, if all), and reports the oldest tick of
// the dirty pages left, whether there are any, and whether a release failed.
// Called with Mu held.
func (ph *Heap) ReleaseDue(cutoff uint32, all bool) (next uint32, left, failed bool) {
	for first, r := range ph.Free {
		if !r.dirty {
			continue
		}
		if all || before(r.oldest, cutoff) {
			failed = !ph.releaseRun(first, &r, cutoff, all) || failed
			ph.Free[first] = r
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
// freed before tick cutoff (all, if all), with their OS pages, in as few
// madvise calls as there are stretches of such OS pages, and brings r's
// dirty, oldest and parked up to date. An OS page at either end of r may
// hold pages of another free run only when that run is clean or parked
// (release, with no ReleaseDelay), whose pages it then gives back too. It
// reports false if a release failed (those pages stay dirty). Called with
// Mu held.
func (ph *Heap) releaseRun(first uint32, r *freeRun, cutoff uint32, all bool) bool {
	due := func(e uint64) bool { return wordDirty(e) && (all || before(wordTick(e), cutoff)) }
	ok := true
	r.dirty, r.Parked = false, false
	keep := func(e uint64, park bool) { // a dirty page that stays
		if park {
			r.Parked = true
			return
		}
		if t := wordTick(e); !r.dirty || before(t, r.oldest) {
			r.oldest = t
		}
		r.dirty = true
	}
	var held func(p uint32) bool // pages the timer keeps, to keep huge pages whole
	if ph.Huge.On && !all {
		rg := ph.region(first)
		held = func(p uint32) bool { return ph.holdsPage(rg, first, r.Pages, p) }
	}
	g := OSPagePages
	end := first + r.Pages
	from := first &^ (g - 1) // a stretch [from, o) of OS pages to give back
	for o := from; ; o += g {
		goes, some := o < end, false
		for p := o; goes && p < o+g; p++ {
			e := *ph.Entry(p)
			goes = WordClass(e) == 0 && (!wordDirty(e) || due(e)) && (held == nil || !held(p)) // free, clean or due, not held
			some = some || wordDirty(e)
		}
		if goes && some {
			continue // and the stretch grows
		}
		if from < o && !ph.giveBack(from, o) {
			for p := max(from, first); p < min(o, end); p++ {
				if e := *ph.Entry(p); wordDirty(e) {
					keep(e, false) // to try again
				}
			}
			ok = false
		}
		if o >= end {
			return ok
		}
		if !goes { // stays: its dirty pages too (parked, unless a huge page holds them: Trim releases those)
			for p := max(o, first); p < min(o+g, end); p++ {
				if e := *ph.Entry(p); wordDirty(e) {
					keep(e, due(e) && (held == nil || !held(p)))
				}
			}
		}
		from = o + g
	}
}

// giveBack releases pages [from, to), whole OS pages of one region, free
// and not in use, and marks them clean. It reports false, changing nothing,
// if madvise refused. Called with Mu held.
func (ph *Heap) giveBack(from, to uint32) bool {
	if osmem.Release(ptr(ph.Addr(from)), uintptr(to-from)<<PageShift) != nil {
		return false // the pages stay usable; count them as still mapped
	}
	for p := from; p < to; p++ {
		if wordDirty(*ph.Entry(p)) {
			*ph.Entry(p) = 0
			ph.Released++
		}
	}
	ph.noteRelease(from, to-from)
	ph.renewMoved(from, to) // merged with their neighbours again
	ph.releasePagemap(from, to)
	if ph.shadowed { // their records are all none: zero pages say so too
		rg := ph.region(from)
		_ = osmem.Release(unsafe.Add(rg.Shadow, uintptr(from-rg.First)<<PageShift), uintptr(to-from)<<PageShift)
	}
	return true
}

// releasePagemap gives back the pagemap's own pages that hold the words of
// pages [lo, hi), just set to 0, and no word that is not 0: they come back
// as zeros, the same words, so Free's unlocked reads find 0 either way.
// Without it a large run's pagemap (8 bytes a page, written at its Alloc
// and its Free) would stay resident after its pages went back: 256 MiB for
// a 256 GiB block (TestPagemapGivenBack). Only whole system pages of the
// pagemap are given back, never one it shares with the span array after it.
// Called with Mu held.
func (ph *Heap) releasePagemap(lo, hi uint32) {
	per := uint32(osmem.PageSize / 8) // pagemap words per system page
	start, end := lo/per, (hi+per-1)/per
	if lo%per != 0 && !ph.zeroWords(start*per, lo) {
		start++
	}
	if hi%per != 0 && !ph.zeroWords(hi, min(end*per, ph.MaxPages)) {
		end--
	}
	end = min(end, ph.MaxPages/per)
	if start < end {
		_ = osmem.Release(unsafe.Add(ph.Pmap, uintptr(start)*uintptr(per)*8), uintptr(end-start)*osmem.PageSize)
	}
}

// zeroWords reports whether the pagemap words of pages [lo, hi) are all 0.
func (ph *Heap) zeroWords(lo, hi uint32) bool {
	for p := lo; p < hi; p++ {
		if *ph.Entry(p) != 0 {
			return false
		}
	}
	return true
}

// Trim releases every dirty page now: Trim's last step.
func (ph *Heap) Trim() {
	ph.Mu.Lock()
	ph.releaseAll()
	if ph.scarred {
		ph.renewFree()
	}
	ph.Mu.Unlock()
}

// Close marks the page heap closed and stops its timer, for Close: every
// later run or span allocation fails, and the timer releases nothing.
func (ph *Heap) Close() {
	ph.Mu.Lock()
	ph.closed = true
	if ph.Timer != nil {
		ph.Timer.Stop()
		ph.Timer = nil
	}
	ph.Mu.Unlock()
	ph.closeHuge()
	ph.closeGuardMappings()
}
