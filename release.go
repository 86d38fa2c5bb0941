package offheap

import (
	"time"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// Giving free pages back to the operating system: a freed page stays dirty
// for ReleaseDelay (pages.go), then the release timer hands it back with
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

const (
	releaseTicks   = 64
	minReleaseTick = time.Millisecond
)

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
	var held func(p uint32) bool // pages the timer keeps, to keep huge pages whole (hugepages.go)
	if ph.huge.on && !all {
		rg := ph.region(first)
		held = func(p uint32) bool { return ph.holdsPage(rg, first, r.pages, p) }
	}
	for i := uint32(0); i < r.pages; {
		e := *ph.entry(first + i)
		if !due(e) || held != nil && held(first+i) {
			if e&pageDirty != 0 {
				keep(e)
			}
			i++
			continue
		}
		j := i + 1
		for j < r.pages && due(*ph.entry(first + j)) && (held == nil || !held(first+j)) {
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
			ph.noteRelease(first+i, j-i)
			if ph.shadowed { // their records are all none: zero pages say so too
				rg := ph.region(first + i)
				_ = osmem.Release(unsafe.Add(rg.shadow, uintptr(first+i-rg.first)<<pageShift), uintptr(j-i)<<pageShift)
			}
		}
		i = j
	}
	return ok
}

// trim releases every dirty page now: Trim's last step.
func (ph *pageHeap) trim() {
	ph.mu.Lock()
	ph.releaseAll()
	ph.mu.Unlock()
}

// close marks the page heap closed and stops its timer, for Close: every
// later run or span allocation fails, and the timer releases nothing.
func (ph *pageHeap) close() {
	ph.mu.Lock()
	ph.closed = true
	if ph.timer != nil {
		ph.timer.Stop()
		ph.timer = nil
	}
	ph.mu.Unlock()
	ph.closeHuge()
}
