package offheap

import (
	"bytes"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
	"github.com/offheap/offheap/internal/pin"
)

// The quarantine: where a checked heap's freed blocks wait, poisoned (or,
// guarded, inaccessible), before they go back to the heap, so that a use
// after free finds the poison or the fault instead of another block.
//
// It is FIFO rings of one kind (ring), each bounded by quarantineBlocks
// blocks and quarantineBytes bytes: one per P for the small blocks that P
// frees, touched only while pinned to it like a magazine (perP), so that a
// checked Free takes no lock; and one under a lock for the page runs (large
// blocks, guarded blocks, an arena's chunks), whose Frees take the page
// heap's lock anyway, and for the small blocks of a P beyond maxProcs. A
// small block that leaves a P's ring goes straight into that P's magazine,
// within the same pin, when its poison is intact and the magazine has room:
// the central lists are reached in batches, as in a fast heap. All the
// rings together hold at most GOMAXPROCS+1 times the bounds; FIFO order
// holds per ring.

const (
	// quarantineBlocks and quarantineBytes bound each ring.
	quarantineBlocks = 1024
	quarantineBytes  = 8 << 20

	// poisonByte fills freed blocks in quarantine.
	poisonByte = 0xdb

	// maxPoison is the longest block poisoned: writing and checking more
	// would take seconds.
	maxPoison = 4 << 30
)

// quarantine is a checked heap's rings.
type quarantine struct {
	// Fixed before the first Free (NewHeap, or a test's setQuarantine).
	maxBlocks uint32  // most blocks a ring holds
	maxBytes  uintptr // most bytes a ring holds
	mask      uint32  // ring slots - 1: a power of two above maxBlocks, so no division

	rings perP[ring] // the small blocks each P freed

	sharedMu sync.Mutex
	shared   *ring // runs, and the small blocks of Ps beyond maxProcs; nil until first used

	// The census of the rings Close unmapped, under rings.mu.
	closedClass             [numClasses]uint64
	closedRuns, closedPages uint64
}

// ring is one FIFO of freed blocks, mapped off-heap with its mask+1 slots
// after it. The census fields are written with plain stores by the ring's
// owner (its P's pinned goroutine, or the holder of sharedMu) and read by
// Stats with atomic loads.
type ring struct {
	head, n  uint32
	bytes    uintptr
	class    [numClasses]uint64 // small blocks, by class
	runs     uint64             // runs of their own
	runPages uint64             // their pages, guard pages included
}

// ringSlot is a block in a ring: its address, with its pagemap class in the
// top byte (addresses are below 1<<56), so that the small block that leaves
// needs no pagemap load; its record follows from its address. At 8 bytes a
// slot, a ring of 1024 blocks is 8 KiB, a third of what it would be with
// the record's address in each slot (BenchmarkCheckedLiveK).
type ringSlot uint64

func makeSlot(a uintptr, cl uint8) ringSlot { return ringSlot(uint64(a) | uint64(cl)<<56) }
func (s ringSlot) addr() uintptr            { return uintptr(s & (1<<56 - 1)) }
func (s ringSlot) class() uint8             { return uint8(s >> 56) }

// init bounds each ring to blocks blocks and bytes bytes.
func (q *quarantine) init(blocks, bytes int) {
	q.maxBlocks = uint32(max(blocks, 0))
	q.maxBytes = uintptr(max(bytes, 0))
	q.mask = 1<<bits.Len32(q.maxBlocks) - 1
}

// ringBytes is the size of a ring's mapping.
func (q *quarantine) ringBytes() uintptr {
	return unsafe.Sizeof(ring{}) + uintptr(q.mask+1)*unsafe.Sizeof(ringSlot(0))
}

// newRing maps an empty ring.
func (q *quarantine) newRing() (*ring, error) {
	p, err := osmem.Map(q.ringBytes())
	return (*ring)(p), err
}

// slot is slot i of p, i masked.
func (q *quarantine) slot(p *ring, i uint32) *ringSlot {
	return (*ringSlot)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(ring{})+uintptr(i&q.mask)*unsafe.Sizeof(ringSlot(0))))
}

// push puts the block at a, of pagemap class cl, at the back of p, counts
// it, and reports whether p is now past its bounds. p is the caller's.
func (c *checker) push(p *ring, a uintptr, cl uint8) bool {
	q := &c.q
	if cl < numClasses {
		return q.pushSmall(p, a, cl)
	}
	*q.slot(p, p.head+p.n) = makeSlot(a, cl)
	p.n++
	n := c.runBytes(a, cl)
	p.bytes += n
	p.runs++
	p.runPages += uint64(n >> pageShift)
	return p.n > q.maxBlocks || p.bytes > q.maxBytes
}

// pop takes the oldest block out of p, which is not empty. The block leaves
// the quarantine's census before the heap counts it free: a racing Stats
// may briefly see it live, never freed twice.
func (c *checker) pop(p *ring) ringSlot {
	q := &c.q
	sl := *q.slot(p, p.head)
	a, cl := sl.addr(), sl.class()
	if cl < numClasses {
		return q.popSmall(p)
	}
	p.head = (p.head + 1) & q.mask
	p.n--
	n := c.runBytes(a, cl)
	p.bytes -= n
	p.runs--
	p.runPages -= uint64(n >> pageShift)
	return sl
}

// pushSmall and popSmall are push and pop for the small blocks of a P's
// ring, which holds no other kind: no pagemap load, and they inline into
// ringPush, on every checked Free.
func (q *quarantine) pushSmall(p *ring, a uintptr, cl uint8) bool {
	*q.slot(p, p.head+p.n) = makeSlot(a, cl)
	p.n++
	p.bytes += uintptr(classSize[cl])
	p.class[cl]++
	return p.n > q.maxBlocks || p.bytes > q.maxBytes
}

func (q *quarantine) popSmall(p *ring) ringSlot {
	sl := *q.slot(p, p.head)
	p.head = (p.head + 1) & q.mask
	p.n--
	cl := sl.class()
	p.bytes -= uintptr(classSize[cl])
	p.class[cl]--
	return sl
}

// runBytes is what the quarantined run at a, of pagemap class cl, holds of
// the heap: its pages, a guarded block's guard page included.
func (c *checker) runBytes(a uintptr, cl uint8) uintptr {
	if cl == pageheap.ClassGuarded {
		a = guardBase(a)
	}
	return uintptr(c.h.pages.RunPages(a)) << pageShift
}

// drain pops every block of p, oldest first, onto out. p is the caller's.
func (c *checker) drain(p *ring, out []ringSlot) []ringSlot {
	for p.n > 0 {
		out = append(out, c.pop(p))
	}
	return out
}

// quarantineRun puts the freed block (or arena run) at a, of pagemap class
// cl, in the runs' ring, gives back the blocks that leave, oldest first, and
// returns the writes after free it found in them. Called between enter and
// exit.
func (c *checker) quarantineRun(a uintptr, cl uint8) error {
	q := &c.q
	var buf [4]ringSlot // usually one leaves for each that enters
	out := buf[:0]
	q.sharedMu.Lock()
	if q.shared == nil {
		p, err := q.newRing()
		if err != nil {
			q.sharedMu.Unlock()
			return c.release(a, cl, true) // no ring: the block goes back at once
		}
		q.shared = p
	}
	for over := c.push(q.shared, a, cl); over && q.shared.n > 0; over = q.shared.n > q.maxBlocks || q.shared.bytes > q.maxBytes {
		out = append(out, c.pop(q.shared))
	}
	q.sharedMu.Unlock()
	return joinErrors(c.releaseAll(out))
}

// quarantineArena takes back an arena's page run at a, which Reset or
// Release gave back, in checked mode: poisoned and quarantined like a freed
// block (it has no record), it goes back to the page heap when it leaves,
// and a write to it meanwhile is a WriteAfterFree. Called between enter and
// exit.
func (h *Heap) quarantineArena(a uintptr) {
	c := h.chk
	poison(bytesAt(a, int(c.poisonLen(a, pageheap.ClassArena))))
	if err := c.quarantineRun(a, pageheap.ClassArena); err != nil {
		c.raise(err)
	}
}

// poisonLen is how many bytes of the quarantined block at a, of pagemap
// class cl, are poisoned: a small block's whole block, a large block's
// length and canary, an arena's run, none of a guarded block (its pages
// are inaccessible instead), and none of a block longer than maxPoison.
func (c *checker) poisonLen(a uintptr, cl uint8) uintptr {
	var n uintptr
	switch cl {
	case pageheap.ClassGuarded:
		return 0
	case pageheap.ClassLarge:
		n = uintptr(c.rec(a).size) + canaryLen
	case pageheap.ClassArena:
		n = c.runBytes(a, cl)
	default:
		return uintptr(classSize[cl])
	}
	if uint64(n) > maxPoison {
		return 0
	}
	return n
}

// release gives back the block at a, of pagemap class cl, that left the
// quarantine: it checks the poison, returns the block's record to none
// and, if giveBack, hands the block back to the heap. It returns the write
// after free it found, if any. Called between enter and exit.
func (c *checker) release(a uintptr, cl uint8, giveBack bool) error {
	raceAcquire(ptr(a)) // race builds: after its Free's poison
	var err error
	n := c.poisonLen(a, cl)
	if cl < numClasses && !poisonedWords(a, uint32(n)) || cl >= numClasses && !poisoned(bytesAt(a, int(n))) {
		err = c.writeAfterFree(a, cl, n)
	}
	if !giveBack {
		return err
	}
	h := c.h
	switch cl {
	case pageheap.ClassArena: // no record
		h.freeLarge(a, pageheap.ClassArena)
	case pageheap.ClassLarge:
		c.rec(a).state = stateNone
		h.freeLarge(a, pageheap.ClassLarge)
	case pageheap.ClassGuarded:
		c.rec(a).state = stateNone
		c.releaseGuarded(a)
	default:
		c.rec(a).state = stateNone
		raceRelease(ptr(a)) // race builds: to its next Alloc
		h.freeToCentral(a, cl)
	}
	return err
}

// releaseAll gives back the blocks that left a ring (release) and returns
// the writes after free it found.
func (c *checker) releaseAll(out []ringSlot) []error {
	var errs []error
	for _, sl := range out {
		if err := c.release(sl.addr(), sl.class(), true); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// takeAll empties every P's ring, for Trim: it takes them all out of
// service, waits until no goroutine can still be using one (quiesce),
// empties them and keeps them as spares, as Heap.drainAllMagazines does
// the magazines. It returns their blocks, oldest first per ring.
func (q *quarantine) takeAll(c *checker) []ringSlot {
	taken := q.rings.takeAll()
	if len(taken) == 0 {
		return nil
	}
	quiesce()
	var out []ringSlot
	for _, p := range taken {
		out = c.drain(p, out)
	}
	q.rings.keep(taken, &c.h.closed)
	return out
}

// takeLocal empties the calling P's ring, for an allocation at the limit:
// pinned to the P, it takes the ring out of service, which makes it the
// caller's alone (every goroutine that used it did so pinned to this P,
// which is now the caller's), empties it unpinned and keeps it as a spare.
func (q *quarantine) takeLocal(c *checker) []ringSlot {
	pid := pin.Pin()
	p := q.rings.get(pid)
	if p != nil && !q.rings.at[pid].CompareAndSwap(p, nil) {
		p = nil
	}
	pin.Unpin()
	if p == nil {
		return nil
	}
	out := c.drain(p, nil)
	q.rings.keep([]*ring{p}, &c.h.closed)
	return out
}

// takeShared empties the runs' ring onto out.
func (q *quarantine) takeShared(c *checker, out []ringSlot) []ringSlot {
	q.sharedMu.Lock()
	defer q.sharedMu.Unlock()
	if q.shared != nil {
		out = c.drain(q.shared, out)
	}
	return out
}

// census adds the small blocks in the rings to by by class, and returns the
// runs there and the pages they hold. It takes the rings' locks and
// allocates nothing (Stats, InUse).
func (q *quarantine) census(by *[numClasses]uint64) (runs, pages uint64) {
	add := func(p *ring) {
		for cl := 1; cl < numClasses; cl++ {
			// The owner writes these with plain stores; an aligned 64-bit
			// load never sees a torn value.
			by[cl] += atomic.LoadUint64(&p.class[cl])
		}
		runs += atomic.LoadUint64(&p.runs)
		pages += atomic.LoadUint64(&p.runPages)
	}
	q.rings.mu.Lock()
	for _, p := range q.rings.all {
		add(p)
	}
	for cl := 1; cl < numClasses; cl++ {
		by[cl] += q.closedClass[cl]
	}
	runs += q.closedRuns
	pages += q.closedPages
	q.rings.mu.Unlock()
	q.sharedMu.Lock()
	if q.shared != nil {
		add(q.shared)
	}
	q.sharedMu.Unlock()
	return runs, pages
}

// close checks every block still in the quarantine for writes after free,
// keeps the rings' census for Stats, and unmaps the rings: Close's part,
// once nothing else runs on the heap. The blocks stay where they are: Close
// unmaps them.
func (q *quarantine) close(c *checker) (errs []error) {
	keep := func(p *ring) { // its census, under rings.mu
		for cl := 1; cl < numClasses; cl++ {
			q.closedClass[cl] += p.class[cl]
		}
		q.closedRuns += p.runs
		q.closedPages += p.runPages
	}
	q.rings.mu.Lock()
	rings := q.rings.all
	for _, p := range rings {
		keep(p)
	}
	q.rings.all, q.rings.spare = nil, nil
	q.sharedMu.Lock()
	if q.shared != nil {
		keep(q.shared)
		rings = append(rings, q.shared)
		q.shared = nil
	}
	q.sharedMu.Unlock()
	q.rings.mu.Unlock()
	for _, p := range rings {
		for k := uint32(0); k < p.n; k++ {
			sl := *q.slot(p, p.head+k)
			if err := c.release(sl.addr(), sl.class(), false); err != nil {
				errs = append(errs, err)
			}
		}
		osmem.Unmap(unsafe.Pointer(p), q.ringBytes())
	}
	return errs
}

// poison fills b with poisonByte.
func poison(b []byte) {
	for len(b) > 0 {
		k := copy(b, poisonBuf[:])
		b = b[k:]
	}
}

// poisoned reports whether b holds only poisonByte.
func poisoned(b []byte) bool {
	for len(b) > 0 {
		k := min(len(b), len(poisonBuf))
		if !bytes.Equal(b[:k], poisonBuf[:k]) {
			return false
		}
		b = b[k:]
	}
	return true
}

var poisonBuf = func() (p [4096]byte) {
	for i := range p {
		p[i] = poisonByte
	}
	return p
}()

// firstDiff is the offset of the first byte of b that is not poison, or -1.
func firstDiff(b []byte) int {
	for i, x := range b {
		if x != poisonByte {
			return i
		}
	}
	return -1
}

// poisonWords fills the n bytes at a, a multiple of 8 (every class size
// is), with poisonByte, two words at a time.
func poisonWords(a uintptr, n uint32) {
	const w = 0x0101010101010101 * poisonByte
	if n > 128 {
		poison(bytesAt(a, int(n))) // memmove's vector loop
		return
	}
	end := a + uintptr(n)
	x := a
	for ; x+16 <= end; x += 16 {
		*(*[2]uint64)(ptr(x)) = [2]uint64{w, w}
	}
	if x < end {
		*(*uint64)(ptr(x)) = w
	}
}

// poisonedWords reports whether the n bytes at a, a multiple of 8, are all
// poisonByte. It ORs the differences together and tests once, which beats
// a test per word (TestPoisonWords checks it finds every byte).
func poisonedWords(a uintptr, n uint32) bool {
	const w = 0x0101010101010101 * poisonByte
	if n > 128 {
		return poisoned(bytesAt(a, int(n))) // memequal's vector loop
	}
	end := a + uintptr(n)
	x := a
	var diff uint64
	for ; x+16 <= end; x += 16 {
		p := (*[2]uint64)(ptr(x))
		diff |= (p[0] ^ w) | (p[1] ^ w)
	}
	if x < end {
		diff |= *(*uint64)(ptr(x)) ^ w
	}
	return diff == 0
}
