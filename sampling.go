package offheap

// Which allocations the slow path samples: the profile's (Options.ProfileRate,
// profile.go) and the guard pages' (Options.SampleRate, guard.go). Both ride
// on the magazines' count of hits, so that the fast path pays one compare
// for the two together, the one it paid before either existed: each
// magazine class keeps the hits count at which each sampler next takes an
// allocation (magazine.next) and the lesser of them as sampleAt, at which
// the fast path declines. The allocation then reaches allocSlow, which asks
// sampleDue what to do with it.
//
// An allocation the magazine does not count (a refill, magazines off, a
// large block, a P without a magazine yet) is drawn for on its own: the
// profile samples a block of s bytes with probability 1-exp(-s/ProfileRate),
// the chance that a byte counter with exponential gaps of mean ProfileRate
// crosses zero within it, as the Go runtime's does; the guard pages take one
// in SampleRate by a shared counter.

import (
	"math"

	"github.com/offheap/offheap/internal/pin"
)

// sampleDue reports whether the allocation of n bytes that reached a fast
// heap's slow path is sampled for guard pages and for the profile, and
// draws the next sample of each sampler that takes it from the magazine's
// count.
func (h *Heap) sampleDue(n int) (guard, prof bool) {
	c, p := h.chk, h.prof
	guardOn := c != nil && c.rate > 0
	if !guardOn && p == nil {
		return false, false
	}
	if n > maxSmall || !h.mags.on {
		guard = guardOn && c.ticks.Add(1)%c.rate == 0
		prof = p != nil && p.draw(sampleSize(n))
		return guard, prof
	}
	cl := sizeClass(n)
	// Drawn before the pin: pinned, the slow path takes no more time than
	// it must.
	var nextGuard, nextProf uint64 = math.MaxUint64, math.MaxUint64
	if guardOn {
		nextGuard = c.interval() - 1 // this one, then interval-1 hits
	}
	if p != nil {
		nextProf = p.gap(cl)
	}
	counted, profDue := false, false
	pid := pin.Pin()
	if m := h.mag(pid); m != nil {
		mc, nx := &m.cls[cl], &m.next[cl]
		counted = true
		if mc.hits >= nx.guard {
			nx.guard = mc.hits + nextGuard
			guard = true
		}
		if mc.hits >= nx.prof {
			nx.prof = mc.hits + nextProf
			profDue = true
		}
		mc.sampleAt = min(nx.guard, nx.prof)
	}
	pin.Unpin()
	if !counted { // this P has no magazine yet
		guard = guardOn && c.ticks.Add(1)%c.rate == 0
	}
	if p != nil && !profDue {
		// Not a magazine hit (a refill, or moved to another P since the
		// fast path declined): a draw of its own.
		profDue = p.draw(int(classSize[cl]))
	}
	// A guarded sample is the checker's block: the profile does not see it
	// (one in SampleRate of the profile's samples, a bias far below the
	// sampling error).
	return guard, profDue && !guard
}

// startSampling draws the first sample of class cl of a new magazine m: in
// a checked heap sampleAt is 0, its hits, so that the fast path declines
// every allocation (see magazine.take); in a heap that samples, the lesser
// of the samplers' first draws; in any other never.
func (h *Heap) startSampling(m *magazine, cl uint8) {
	nx := &m.next[cl]
	nx.guard, nx.prof = math.MaxUint64, math.MaxUint64
	c := h.chk
	if c != nil && c.all {
		m.cls[cl].sampleAt = 0
		return
	}
	if c != nil && c.rate > 0 {
		nx.guard = c.interval() - 1
	}
	if h.prof != nil {
		nx.prof = h.prof.gap(cl)
	}
	m.cls[cl].sampleAt = min(nx.guard, nx.prof)
}
