package offheap

// Which allocations the slow path samples: the profile's (Options.ProfileBytes,
// profile.go) and the guard pages' (Options.GuardOneIn, guard.go). Both ride
// on the magazines' count of hits, so that the fast path pays one compare
// for the two together, the one it paid before either existed: each
// magazine class keeps the hits count at which each sampler next takes an
// allocation (magazine.next) and the lesser of them as sampleAt, at which
// the fast path declines. The allocation then reaches allocSlow, which asks
// sampleDue what to do with it. A Local's stacks keep samplers' counts and a
// sampleAt of their own, as the magazines do (Local.sampleDue).
//
// The profile samples each block of s bytes with probability
// 1-exp(-s/ProfileBytes), the chance that a byte counter with exponential
// gaps of mean ProfileBytes crosses zero within it, as the Go runtime's does:
// per class, the number of allocations between samples is then geometric,
// and each counter draws it. Small allocations that no magazine counts (a
// refill's own, or every one with magazines off) are counted by their
// class's central list under the lock it takes anyway (countSample); a
// large block or an arena's chunk is drawn for on its own. The guard pages
// take one in GuardOneIn of the allocations no magazine counts by a shared
// counter.

import (
	"math"
	"math/rand/v2"

	"github.com/offheap/offheap/internal/pin"
)

// guardSampled reports whether h samples allocations for guard pages
// (Options.GuardOneIn, with or without Checked).
func (h *Heap) guardSampled() bool { return h.opts.GuardOneIn > 0 }

// nextGuard is the count of hits of a magazine's or a Local's stack, now at
// hits, at which the guard pages' next sample is due: this allocation's,
// then interval-1 hits, the interval drawn from 1 to 2*GuardOneIn-1 (one in
// GuardOneIn on average); never in a heap that does not sample.
func (h *Heap) nextGuard(hits uint64) uint64 {
	if !h.guardSampled() {
		return math.MaxUint64
	}
	return hits + rand.Uint64N(2*uint64(h.opts.GuardOneIn)-1)
}

// guardTick counts a sampled heap's allocation that no stack counts (a
// large block, magazines off, a P without a magazine, every allocation of
// a checked heap) and reports whether it is the guard pages' sample: one in
// GuardOneIn.
func (h *Heap) guardTick() bool {
	return h.guardTicks.Add(1)%uint64(h.opts.GuardOneIn) == 0
}

// sampleDue reports whether the allocation of n bytes, of class cl (0 if
// large), that reached a fast heap's slow path is sampled for guard pages
// and for the profile, and draws the next sample of each sampler that
// takes it from the magazine's count.
func (h *Heap) sampleDue(n int, cl uint8) (guard, prof bool) {
	p := h.prof
	guardOn := h.guardSampled()
	if !guardOn && p == nil {
		return false, false
	}
	if cl == 0 {
		guard = guardOn && h.guardTick()
		prof = p != nil && p.draw(n)
		return guard, prof
	}
	counted := false
	if h.mags.on {
		pid := pin.Pin()
		if m := h.mag(pid); m != nil {
			mc, nx := &m.cls[cl], &m.next[cl]
			counted = true
			if mc.hits >= nx.guard {
				nx.guard = h.nextGuard(mc.hits)
				guard = true
			}
			if mc.hits >= nx.prof {
				nx.prof = mc.hits + p.gap(cl)
				prof = true
			}
			mc.sampleAt = min(nx.guard, nx.prof)
		}
		pin.Unpin()
	}
	if !counted && guardOn { // magazines off, or this P has none yet
		guard = h.guardTick()
	}
	if p != nil && !prof {
		// Not a magazine hit: a refill, magazines off, or moved to another
		// P since the fast path declined. The central list counts these
		// (countSample) and marks the one due.
		cen := &h.central[cl]
		prof = cen.profDue.Load() && cen.takeSample(p) // a load, not a call, while none is due
	}
	// A guarded sample is the checker's block: the profile does not see it
	// (one in GuardOneIn of the profile's samples, a bias far below the
	// sampling error).
	return guard, prof && !guard
}

// takeSample reports whether the allocation of c's class that reached the
// slow path is the one countSample marked, and if so draws the next gap.
func (c *central) takeSample(p *profiler) bool {
	if !c.profDue.CompareAndSwap(true, false) {
		return false
	}
	c.mu.Lock()
	c.drawSample(p)
	c.mu.Unlock()
	return true
}

// drawSample draws how many allocations countSample lets pass before the
// next sample, with mu held (or before the heap is in use).
func (c *central) drawSample(p *profiler) {
	if k := p.gap(c.class); k > 0 {
		c.profLeft = k
	} else {
		c.profDue.Store(true)
	}
}

// startProfile gives h the profile of ProfileBytes rate (none if negative)
// and draws each central list's first sample.
func (h *Heap) startProfile(rate int) {
	h.prof = newProfiler(rate)
	if h.prof == nil {
		return
	}
	for c := 1; c < numClasses; c++ {
		h.central[c].drawSample(h.prof)
	}
}

// startCacheSampling draws the first sample of each class of st, the state
// of a new Local, for each sampler, counted from its hits (a state may have
// served an earlier Local), as startSampling does for a magazine; in a heap
// that does not sample, never.
func (h *Heap) startCacheSampling(st *cacheState) {
	for cl := 1; cl < numClasses; cl++ {
		mc, nx := &st.cls[cl], &st.next[cl]
		nx.guard, nx.prof = h.nextGuard(mc.hits), math.MaxUint64
		if h.prof != nil {
			nx.prof = mc.hits + h.prof.gap(uint8(cl))
		}
		mc.sampleAt = min(nx.guard, nx.prof)
	}
}

// sampleDue is Heap.sampleDue for an allocation of class cl that reached
// the Local's slow path: the samplers whose next sample its stack declined
// at sampleAt draw their next, counted from its hits as a magazine's are;
// a refill is the profile's sample if the class's central list marked it.
// Called between enter and exit, by the owner.
func (c *Local) sampleDue(cl uint8) (guard, prof bool) {
	h := c.h
	mc, nx := &c.st.cls[cl], &c.st.next[cl]
	if mc.hits >= nx.guard {
		nx.guard = h.nextGuard(mc.hits)
		guard = true
	}
	if mc.hits >= nx.prof {
		nx.prof = mc.hits + h.prof.gap(cl)
		prof = true
	}
	mc.sampleAt = min(nx.guard, nx.prof)
	if p := h.prof; p != nil && !prof {
		cen := &h.central[cl]
		prof = cen.profDue.Load() && cen.takeSample(p) // a load, not a call, while none is due
	}
	return guard, prof && !guard // as Heap.sampleDue
}

// startSampling draws the first sample of class cl of a new magazine m: in
// a checked heap sampleAt is 0, its hits, so that the fast path declines
// every allocation (see magazine.take); in a heap that samples, the lesser
// of the samplers' first draws; in any other never.
func (h *Heap) startSampling(m *magazine, cl uint8) {
	nx := &m.next[cl]
	if h.checked() {
		m.cls[cl].sampleAt = 0
		return
	}
	nx.guard, nx.prof = h.nextGuard(0), math.MaxUint64
	if h.prof != nil {
		nx.prof = h.prof.gap(cl)
	}
	m.cls[cl].sampleAt = min(nx.guard, nx.prof)
}
