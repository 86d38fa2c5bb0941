package offheap

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
)

// minReclaim is the fewest states in use from which NewLocal collects to
// reclaim unreachable Locals' states: a bound of a few MiB of states and
// blocks for a program that drops Locals unclosed in a loop (each holds a
// refill's batch of its class at least: TestLocalDroppedUnclosed).
const minReclaim = 256

// initCaches sizes the Locals' stacks for a heap of MagazineDepth depth: as
// deep as its magazines, or as the default depth with magazines off.
func (cs *cacheSet) init(depth int) {
	if depth <= 0 {
		depth = DefaultMagazineDepth
	}
	for c := 1; c < numClasses; c++ {
		if classSize[c] <= cacheMax {
			cs.caps[c] = classCap(depth, c)
		}
	}
}

// batchOf is how many blocks a Local's stack of capacity cap moves to or
// from the central list at once: half of it, as a magazine does.
func batchOf(cap uint32) uint32 { return max(cap/2, 1) }

// cacheBound is the most bytes of free blocks one Local holds in a heap of
// MagazineDepth depth.
func cacheBound(depth int) int {
	var cs cacheSet
	cs.init(depth)
	total := 0
	for c := 1; c < numClasses; c++ {
		total += int(cs.caps[c]) * int(classSize[c])
	}
	return total
}

// getCache gives the new Local w points to a state, readied by ready: a
// spare, one reclaimed from an unreachable Local, or a new mapping; call
// names the method, for the error. ready runs under cs.mu, which
// closeCaches takes before it unmaps the states: a Close that begins once
// the state is returned finds it ready, and one that began before is seen
// here (closed), so no Close unmaps a state while ready writes it.
func (h *Heap) getCache(w weak.Pointer[Local], call string, ready func(*cacheState)) (*cacheState, error) {
	cs := &h.caches
	cs.mu.Lock()
	if len(cs.spare) == 0 && len(cs.owners) >= max(cs.reclaimAt, minReclaim) {
		cs.mu.Unlock()
		h.reclaimCaches()
		cs.mu.Lock()
	}
	defer cs.mu.Unlock()
	if h.closed.Load() {
		return nil, closedError(call)
	}
	var st *cacheState
	if k := len(cs.spare); k > 0 {
		st = cs.spare[k-1]
		cs.spare = cs.spare[:k-1]
	} else {
		p, err := osmem.Map(unsafe.Sizeof(cacheState{}))
		if err != nil {
			return nil, stateMapError(call, err)
		}
		st = (*cacheState)(p)
		for c := 1; c < numClasses; c++ {
			st.cls[c].cap = cs.caps[c]
		}
		cs.all = append(cs.all, st)
		list := cs.all
		cs.list.Store(&list)
	}
	if cs.owners == nil {
		cs.owners = make(map[*cacheState]weak.Pointer[Local])
	}
	cs.owners[st] = w
	ready(st)
	return st, nil
}

// stateMapError is NewLocal's error when the system refuses the mapping
// for a Local's state: ErrAddressSpace, as for a region the system refuses,
// with the system's own error (the errno, which osmem's error wraps).
func stateMapError(call string, err error) error {
	if e := errors.Unwrap(err); e != nil {
		err = e
	}
	return fmt.Errorf("%w: %s: the system refused a mapping of %s for the Local's stacks (%w); "+
		"raise the process's address-space limits (ulimit -v, vm.max_map_count), close Locals no longer in use, or use the Heap",
		ErrAddressSpace, call, pageheap.SizeString(uint64(unsafe.Sizeof(cacheState{}))), err)
}

// reclaimCaches runs a collection and takes back, emptied, the states of
// the Locals it found unreachable, as their cleanups would (see cacheSet).
// A Local whose weak pointer is nil is used by no goroutine: one inside a
// call holds the Local.
func (h *Heap) reclaimCaches() {
	runtime.GC()
	if !h.enter() {
		return
	}
	defer h.exit()
	cs := &h.caches
	cs.mu.Lock()
	var dead []*cacheState
	for st, w := range cs.owners {
		if w.Value() == nil {
			delete(cs.owners, st)
			dead = append(dead, st)
		}
	}
	cs.reclaimAt = 2 * len(cs.owners)
	cs.mu.Unlock()
	for _, st := range dead {
		h.emptyCache(st)
	}
	cs.mu.Lock()
	cs.spare = append(cs.spare, dead...)
	cs.mu.Unlock()
}

// dropCache empties the state of a Local that is closed or unreachable (w
// its weak pointer) and keeps it for the next NewLocal, unless
// reclaimCaches took it first. On a closed heap it does nothing and reports
// false: Close saved every state's census and unmapped them. It runs on the
// goroutine of Local.Close or on the runtime's cleanup goroutine, between
// enter and exit, so the heap's Close waits it out.
func (h *Heap) dropCache(st *cacheState, w weak.Pointer[Local]) bool {
	if !h.enter() {
		return false
	}
	defer h.exit()
	cs := &h.caches
	cs.mu.Lock()
	if cs.owners[st] != w {
		cs.mu.Unlock()
		return true // reclaimed already, and maybe another Local's now
	}
	delete(cs.owners, st)
	cs.mu.Unlock()
	h.emptyCache(st)
	cs.mu.Lock()
	cs.spare = append(cs.spare, st)
	cs.mu.Unlock()
	return true
}

// emptyCache gives every block in st back to the central lists, in the
// batches the magazines spill. Called between enter and exit by the
// state's owner.
func (h *Heap) emptyCache(st *cacheState) {
	for cl := 1; cl < numClasses; cl++ {
		mc := &st.cls[cl]
		for mc.n > 0 {
			k := min(mc.n, batchOf(mc.cap))
			h.central[cl].putBatch(h, st.slots[cl][mc.n-k:mc.n])
			mc.n -= k
		}
	}
}

// censusCaches adds the Locals' census to s: under mu, so that no state is
// added or unmapped meanwhile; each count is the owner's, written with
// plain stores, read whole.
func (h *Heap) censusCaches(s *Stats) {
	cs := &h.caches
	cs.mu.Lock()
	defer cs.mu.Unlock()
	// Before the heap's Close, closed is zero; after, all is empty.
	s.LocalHits += cs.closed.hits
	for c := 1; c < numClasses; c++ {
		s.Classes[c-1].Allocs += cs.closed.class[c].hits
		s.Classes[c-1].Frees += cs.closed.class[c].frees
	}
	for _, st := range cs.all {
		for c := 1; c < numClasses; c++ {
			mc := &st.cls[c]
			hits := atomic.LoadUint64(&mc.hits)
			s.LocalHits += hits
			s.Classes[c-1].Allocs += hits
			s.Classes[c-1].Frees += atomic.LoadUint64(&mc.frees)
			s.LocalBytes += uint64(atomic.LoadUint32(&mc.n)) * uint64(classSize[c])
		}
	}
}

// closeCaches saves the Locals' census and unmaps their states, for the
// heap's Close, which has waited out every Local call that touches them:
// each fast path saw fastSize nonzero and ended before the quiesce, and
// every other one runs between enter and exit. The open Locals keep
// pointers to unmapped states, which they never touch again: their fast
// paths see fastSize 0, and enter fails.
func (h *Heap) closeCaches() error {
	cs := &h.caches
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, st := range cs.all {
		for c := 1; c < numClasses; c++ {
			mc := &st.cls[c]
			cs.closed.hits += mc.hits
			cs.closed.class[c].hits += mc.hits
			cs.closed.class[c].frees += mc.frees
		}
	}
	var err error
	for _, st := range cs.all {
		if e := osmem.Unmap(unsafe.Pointer(st), unsafe.Sizeof(*st)); e != nil {
			err = e
		}
	}
	cs.all, cs.spare, cs.owners = nil, nil, nil
	return err
}

// cachedAt reports whether block a of class cl waits in a Local's stack,
// for the double-free check (freeState), which holds no Local's owner
// still: a block an owner is moving meanwhile may go unseen, as one
// between a magazine and the central list does. Called between enter and
// exit.
func (h *Heap) cachedAt(a uintptr, cl uint8) bool {
	cs := &h.caches
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, st := range cs.all {
		n := min(atomic.LoadUint32(&st.cls[cl].n), maxDepth)
		for i := range n {
			if atomic.LoadUintptr(&st.slots[cl][i]) == a {
				return true
			}
		}
	}
	return false
}
