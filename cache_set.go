package offheap

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// cacheSet is a heap's registry of Cache states.
type cacheSet struct {
	mu     sync.Mutex
	all    []*cacheState                 // every state mapped: the census, the double-free check, Close
	spare  []*cacheState                 // states of closed Caches, emptied, for the next NewCache
	list   atomic.Pointer[[]*cacheState] // all, for InUse without mu (only grows, as perP's)
	caps   [numClasses]uint32            // a new state's stack caps, fixed at NewHeap
	closed struct {                      // the census of every state, saved by the heap's Close
		hits  uint64
		class [numClasses]struct{ hits, frees uint64 }
	}
}

// initCaches sizes the Caches' stacks for a heap of MagazineDepth depth: as
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

// batchOf is how many blocks a Cache's stack of capacity cap moves to or
// from the central list at once: half of it, as a magazine does.
func batchOf(cap uint32) uint32 { return max(cap/2, 1) }

// cacheBound is the most bytes of free blocks one Cache holds in a heap of
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

// get gives a new Cache a state: a spare, or a new mapping.
func (cs *cacheSet) get(closed *atomic.Bool) (*cacheState, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if closed.Load() {
		return nil, closedError("NewCache")
	}
	if k := len(cs.spare); k > 0 {
		st := cs.spare[k-1]
		cs.spare = cs.spare[:k-1]
		return st, nil
	}
	p, err := osmem.Map(unsafe.Sizeof(cacheState{}))
	if err != nil {
		return nil, err
	}
	st := (*cacheState)(p)
	for c := 1; c < numClasses; c++ {
		st.cls[c].cap = cs.caps[c]
	}
	cs.all = append(cs.all, st)
	list := cs.all
	cs.list.Store(&list)
	return st, nil
}

// dropCache empties the state of a Cache that is closed or unreachable and
// keeps it for the next NewCache. On a closed heap it does nothing and
// reports false: Close saved every state's census and unmapped them. It
// runs on the goroutine of Cache.Close or on the runtime's cleanup
// goroutine, between enter and exit, so the heap's Close waits it out.
func (h *Heap) dropCache(st *cacheState) bool {
	if !h.enter() {
		return false
	}
	defer h.exit()
	h.emptyCache(st)
	cs := &h.caches
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

// censusCaches adds the Caches' census to s: under mu, so that no state is
// added or unmapped meanwhile; each count is the owner's, written with
// plain stores, read whole.
func (h *Heap) censusCaches(s *Stats) {
	cs := &h.caches
	cs.mu.Lock()
	defer cs.mu.Unlock()
	// Before the heap's Close, closed is zero; after, all is empty.
	s.CacheHits += cs.closed.hits
	for c := 1; c < numClasses; c++ {
		s.Classes[c-1].Allocs += cs.closed.class[c].hits
		s.Classes[c-1].Frees += cs.closed.class[c].frees
	}
	for _, st := range cs.all {
		for c := 1; c < numClasses; c++ {
			mc := &st.cls[c]
			hits := atomic.LoadUint64(&mc.hits)
			s.CacheHits += hits
			s.Classes[c-1].Allocs += hits
			s.Classes[c-1].Frees += atomic.LoadUint64(&mc.frees)
			s.CacheBytes += uint64(atomic.LoadUint32(&mc.n)) * uint64(classSize[c])
		}
	}
}

// closeCaches saves the Caches' census and unmaps their states, for the
// heap's Close, which has waited out every Cache call that touches them:
// each fast path saw fastSize nonzero and ended before the quiesce, and
// every other one runs between enter and exit. The open Caches keep
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
	cs.all, cs.spare = nil, nil
	return err
}

// cachedAt reports whether block a of class cl waits in a Cache's stack,
// for the double-free check (freeState), which holds no Cache's owner
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
