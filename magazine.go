package offheap

import (
	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pin"
	"unsafe"
)

// A magazine is one P's private stock of free blocks: for each size class a
// stack of at most cap blocks. Only the goroutine pinned to that P touches it,
// so Alloc pops and Free pushes with plain loads and stores: no lock, no
// atomic, no cache line shared with another P (each magazine is its own
// mapping). It lives off-heap, so the race detector does not see it; pinning
// is the synchronization.
//
// An empty stack refills from the class's central list in one batch; a full
// stack gives half of itself back in one batch. So the central lock is taken
// at most once per batch operations, and a goroutine that only frees (the
// consumer of a producer/consumer pair) hands its blocks on instead of
// hoarding them.
//
// The bytes one P can hold are bounded: a class keeps at most cap blocks, and
// cap is MagazineDepth for classes up to magazineClassBytes/MagazineDepth bytes
// and shrinks for larger classes so that a class never holds more than
// magazineClassBytes (but always at least minClassDepth blocks). The big
// classes, above bigClassMin, hold at most bigClassBytes each (at least one
// block): 3.2 MiB for all 24 of them, where four blocks each would be 11
// MiB per P. A block that big is written for microseconds by its user, so
// the central round trip a shallow magazine adds (tens of ns) is small
// beside it; what the magazine saves is the page heap's lock and the
// zeroing of a fresh run, several times the pair's cost as a page run
// (BenchmarkLiveKBig; docs/DESIGN.md). The bound for the default depth is
// MagazineBound(0).
//
// The magazine also holds the P's share of the census: every Alloc it serves
// and every Free it takes is counted here, so Stats sees the fast path.
type magazine struct{ stacks }

// stacks is a stock of free blocks, per size class a stack with its header
// and census: a P's magazine, or a Local's, whose owner, the
// pinned goroutine or the Local's, alone writes it.
type stacks struct {
	cls   [numClasses]classStack
	slots [numClasses][maxDepth]uintptr
	next  [numClasses]sampleNext // the slow path's, out of the fast path's lines
}

// sampleNext is when each of a stack's samplers next takes an allocation,
// as a hits count: the profile's and the guard pages'. The class's sampleAt is the lesser of the two; only the
// owner's slow path reads or writes them (sampleDue).
type sampleNext struct{ prof, guard uint64 }

// classStack is one class's stack header and census in a magazine or a
// Local: 32 bytes, so that the classes' headers tile cache lines and pop's
// loads and stores fall on one.
type classStack struct {
	n, cap uint32 // blocks held; most blocks held (0 for the classes a Local does not hold)
	hits   uint64 // Allocs served from this stack
	frees  uint64 // Frees pushed onto this stack

	// sampleAt is the hits count at which the fast path declines, so that
	// the allocation reaches the slow path and is sampled (by the profile,
	// profile.go, or for guard pages, guard.go). Only the owner touches
	// it. The maximum uint64, never reached, in a heap that does not
	// sample; in a checked heap's magazine, from which its checker takes
	// every allocation, always hits (take keeps the two equal), so the
	// fast path declines every one (a checked heap's Local holds nothing).
	sampleAt uint64
}

var _ [0]struct{} = [unsafe.Sizeof(classStack{}) - 32]struct{}{}

// magazines is a heap's set of per-P magazines and how they are sized: the
// fast path's, and in a checked heap the checker's, which stocks them and
// gives blocks back through them as the fast path does.
type magazines struct {
	perP[magazine] // at is read by the fast path; the rest under mu

	// Fixed at NewHeap.
	on    bool               // MagazineDepth > 0: blocks pass through magazines
	caps  [numClasses]uint32 // blocks a magazine holds per class
	batch [numClasses]uint32 // blocks moved per refill or spill; 1 when off

	// The census of the magazines, saved under mu by Close before it unmaps
	// them.
	closedHits  uint64
	closedClass [numClasses]struct{ hits, frees uint64 }
}

const (
	// DefaultMagazineDepth is the depth a heap uses when Options.MagazineDepth
	// is 0: deep enough for a producer that hands blocks to a consumer.
	DefaultMagazineDepth = 128

	// MaxMagazineDepth is the largest depth Options.MagazineDepth accepts.
	MaxMagazineDepth = maxDepth

	maxDepth           = 256
	magazineClassBytes = 64 << 10
	minClassDepth      = 4
	bigClassMin        = 32 << 10
	bigClassBytes      = 128 << 10
)

// classCap is how many blocks of class c a magazine of the given depth holds.
func classCap(depth int, c int) uint32 {
	size := int(classSize[c])
	n := max(magazineClassBytes/size, minClassDepth)
	if size > bigClassMin {
		n = max(bigClassBytes/size, 1)
	}
	return uint32(min(n, depth))
}

// MagazineBound returns the most bytes of free blocks one P's magazines can
// hold for a heap with the given MagazineDepth (0 = the default). The bytes a
// heap holds in magazines are at most GOMAXPROCS times this.
func MagazineBound(depth int) int {
	if depth == 0 {
		depth = DefaultMagazineDepth
	}
	if depth < 0 {
		return 0
	}
	depth = min(depth, maxDepth)
	total := 0
	for c := 1; c < numClasses; c++ {
		total += int(classCap(depth, c)) * int(classSize[c])
	}
	return total
}

// init sizes the magazines for MagazineDepth depth and the depots they
// trade batches with.
func (ms *magazines) init(depth int, central *[numClasses]central) {
	if depth == 0 {
		depth = DefaultMagazineDepth
	}
	ms.on = depth > 0
	for c := 1; c < numClasses; c++ {
		ms.batch[c] = 1
		if ms.on {
			ms.caps[c] = classCap(depth, c)
			ms.batch[c] = max(ms.caps[c]/2, 1)
			central[c].depotMax = max(depotBytes/int(ms.batch[c]*classSize[c]), minDepotBatches)
		}
	}
}

// mag returns P pid's magazine, or nil if it has none (see perP.get).
func (h *Heap) mag(pid int) *magazine {
	if uint(pid) < maxProcs {
		return h.mags.at[pid].Load()
	}
	return nil
}

// installMagazine gives P pid a magazine if it has none. Called unpinned: it
// may block on the lock and the mmap. On a closed heap it installs nothing
// and returns ErrClosed.
func (h *Heap) installMagazine(pid int) error {
	return h.mags.install(pid, &h.closed, func() (*magazine, error) {
		p, err := osmem.Map(unsafe.Sizeof(magazine{}))
		if err != nil {
			return nil, err
		}
		m := (*magazine)(p)
		for c := 1; c < numClasses; c++ {
			m.cls[c].cap = h.mags.caps[c]
			h.startSampling(m, uint8(c)) // sampling.go
		}
		return m, nil
	})
}

// take is pop for a checked heap's checker, to which every allocation
// comes: it ignores sampleAt and keeps it equal to hits, so that the fast
// path keeps declining.
func (m *magazine) take(c uint8) uintptr {
	mc := &m.cls[c]
	if k := mc.n; k != 0 {
		k--
		a := m.slots[c][k%maxDepth]
		mc.n = k
		mc.hits++
		mc.sampleAt = mc.hits
		return a
	}
	return 0
}

// smallBlock is a block of class c for an allocation that the P's magazine
// could not serve: from a refill, or with magazines off straight from the
// central list.
func (h *Heap) smallBlock(c uint8) (uintptr, error) {
	if h.mags.on {
		return h.refill(c)
	}
	return h.central[c].getOne(h)
}

// refill serves an Alloc of class c that found its magazine empty: it takes a
// batch from the central list, returns the first block for the caller and
// stacks the rest in the magazine of whichever P the goroutine is on once the
// lock is released. The central lock is never taken while pinned.
func (h *Heap) refill(c uint8) (uintptr, error) {
	pid := pin.Pin()
	m := h.mag(pid)
	pin.Unpin()
	if m == nil {
		if err := h.installMagazine(pid); err != nil {
			return 0, err
		}
	}
	var buf [maxDepth/2 + 1]uintptr
	n, _, err := h.central[c].get(h, buf[:h.mags.batch[c]])
	if err != nil {
		return 0, err
	}
	k := 1
	pid = pin.Pin()
	if m := h.mag(pid); m != nil {
		mc := &m.cls[c]
		for ; k < n && mc.n < mc.cap; k++ {
			m.slots[c][mc.n] = buf[k]
			mc.n++
		}
	}
	pin.Unpin()
	if k < n { // moved to a P whose stack had less room
		h.central[c].put(h, buf[k:n])
	}
	return buf[0], nil
}

// freeToCentral frees the verified start a of a block of class c, its key
// written, that the magazine did not take: spilling half of a full
// magazine, or straight to the central list with magazines off or none to
// be had.
func (h *Heap) freeToCentral(a uintptr, c uint8) {
	if !h.mags.on || h.spill(a, c) != nil {
		h.central[c].freeDirect(h, a)
	}
}

// spill serves a Free of block b of class c that found its magazine full (or
// missing): it pushes b and moves the older half of the stack to the central
// list in one batch, outside the pin.
func (h *Heap) spill(b uintptr, c uint8) error {
	for {
		pid := pin.Pin()
		m := h.mag(pid)
		if m == nil {
			pin.Unpin()
			if pid >= maxProcs {
				h.central[c].freeDirect(h, b)
				return nil
			}
			if err := h.installMagazine(pid); err != nil {
				return err
			}
			continue
		}
		var buf [maxDepth / 2]uintptr
		k := m.push(c, b, h.mags.batch[c], &buf)
		pin.Unpin()
		if k > 0 {
			h.central[c].putBatch(h, buf[:k])
		}
		return nil
	}
}

// push stacks freed block b of class c and counts the Free. A full stack
// first moves its oldest batch blocks into spilled (the bottom of the stack
// is the coldest), and push returns how many, for the caller to hand to the
// central list once unpinned. The caller is pinned to m's P, and the stack's
// cap is not 0.
func (m *magazine) push(c uint8, b uintptr, batch uint32, spilled *[maxDepth / 2]uintptr) int {
	mc := &m.cls[c]
	k := 0
	if mc.n >= mc.cap {
		k = int(batch)
		s := &m.slots[c]
		copy(spilled[:k], s[:k])
		copy(s[:], s[k:mc.n])
		mc.n -= uint32(k)
	}
	m.add(c, b)
	return k
}

// drainAllMagazines empties every P's magazine into the central lists: it
// takes them all out of service, waits until no goroutine can still be
// using one (quiesce), empties them and keeps them as spares, which the Ps
// get back the next time they need a magazine (installMagazine).
func (h *Heap) drainAllMagazines() {
	taken := h.mags.takeAll()
	if len(taken) == 0 {
		return
	}
	quiesce()
	for _, m := range taken {
		h.emptyMagazine(m)
	}
	h.mags.keep(taken, &h.closed)
}

// emptyMagazine gives every block in m to the central lists. m is out of
// service: no goroutine can reach it (quiesce), so plain loads and stores
// do. Stats may read its census meanwhile, as it does any P's.
func (h *Heap) emptyMagazine(m *magazine) {
	for c := 1; c < numClasses; c++ {
		if k := m.cls[c].n; k > 0 {
			h.central[c].put(h, m.slots[c][:k])
			m.cls[c].n = 0
		}
	}
}

// drainLocalMagazine empties the calling P's magazine into the central
// lists, without a stop of the world: a checked heap at its limit
// (checker.flush).
func (h *Heap) drainLocalMagazine() {
	var buf [maxDepth]uintptr
	for c := 1; c < numClasses; c++ {
		pid := pin.Pin()
		m := h.mag(pid)
		if m == nil {
			pin.Unpin()
			return
		}
		mc := &m.cls[c]
		k := int(mc.n)
		copy(buf[:k], m.slots[c][:k])
		mc.n = 0
		pin.Unpin()
		if k > 0 {
			h.central[c].put(h, buf[:k])
		}
	}
}

// closeMagazines saves the magazines' census and returns them, for Close,
// which has taken them out of service and waited out their users, and
// unmaps them.
func (h *Heap) closeMagazines() []*magazine {
	ms := &h.mags
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, m := range ms.all {
		for c := 1; c < numClasses; c++ {
			ms.closedHits += m.cls[c].hits
			ms.closedClass[c].hits += m.cls[c].hits
			ms.closedClass[c].frees += m.cls[c].frees
		}
	}
	return ms.all
}
