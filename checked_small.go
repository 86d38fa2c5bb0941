package offheap

// Checked small blocks: the path every checked Alloc and Free of a block up
// to maxSmall-canaryLen bytes takes, kept free of locks and of Go maps (see
// the top of checked.go for the design; this file is its mechanics).
//
// What a 64-byte Alloc+Free pair costs (BenchmarkCheckedPair64, 2-vCPU VM,
// medians of 5): 55 ns, against 12.2 in fast mode, 72 before this file's
// latest changes and 200 with a Go map, one global quarantine under a lock
// and no magazines. The floor arm there does only what checked mode must
// (two stacks, the record, the canary, the compare-and-swap, the poison
// written and checked through a quarantine of 1024) with none of the heap
// around it, and takes 35 ns, 2.9x fast mode. Of the 20 ns between them:
// the empty fast-path magazine that a checked Alloc pins for (see
// checked.go), the pagemap load and division that name a freed block's
// class and check its start, the magazines' and rings' census, and the
// calls between the heap and the checker. Each stack is walked from the
// checker's own frame, called straight from Alloc and Free: every frame
// between the caller and the walk is a dependent load per capture, and
// walking from two or three frames deeper cost about 10 ns a pair.

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pin"
)

// errNoMeta is returned when the record table cannot be mapped.
var errNoMeta = errors.New("offheap: checked mode: mapping block metadata failed")

// smallRec is the metadata of one small block of a checked heap. It lives
// off-heap in the checker's record table, at the address computed from the
// block's, never next to the block: an overrun of a block cannot reach it.
// The garbage collector does not see it; the stacks are code addresses, not
// Go pointers, so that is safe.
type smallRec struct {
	// state is stateNone, stateLive, stateFreeing or stateFreed. Free moves
	// it from live with a compare-and-swap, so of two Frees of one block
	// exactly one proceeds: a double free is found without a lock. Every
	// other transition is made by the block's sole owner (the allocating
	// goroutine, the freeing one, or the quarantine's P) with a plain
	// store.
	state uint32
	size  uint32  // requested length
	addr  uintptr // the block's start
	sum   uint64  // recSum(addr, size): a stray write to either is Corrupted
	alloc stackID // where it was allocated
	free  stackID // where it was freed; 0 while live
}

// The record table mirrors the heap's address space: one record for each
// recGranule bytes, the record of the block that starts in them, at the
// same offset in the table as the block's granule in the heap. A checked
// small block is at least recGranule bytes (minCheckedClass), so no two
// start in one granule. Finding a block's record is a subtraction and a
// mask, where reading the pagemap, dividing by the block size and looking
// the span up took a chain of three loads and a multiply: a checked 64-byte
// pair went from 63-67 ns to 57-62 (BenchmarkCheckedPair64, interleaved).
//
// Each region of the heap (region.go) has its own part of the table, the
// same size, mapped with it (MAP_NORESERVE) and unmapped at Close: region 0's
// is c.table, found with one compare; a later region's is found as its
// blocks are (recFar). Its pages are committed as records are written: at
// most as many bytes as the heap's small blocks use at their peak, fewer
// for larger classes (a 4 KiB page of records covers 4 KiB of blocks; one
// 16 KiB block has one record). The page heap releases a run's records with
// its pages (region.shadow). A record whose block went back to the heap has
// state stateNone, and so has every record of a fresh or released page: a
// span is only given back once all its blocks have left the quarantine.
const (
	recGranule = 32
	recSize    = unsafe.Sizeof(smallRec{})
)

// A record fits its granule.
var _ [recGranule - recSize]byte

// minCheckedClass is the smallest class a checked small block takes, so
// that blocks start at least recGranule bytes apart.
var minCheckedClass = sizeClass(recGranule)

// checkedClass is the class of a checked small block of n bytes: room for
// the canary, and at least minCheckedClass.
func checkedClass(n int) uint8 {
	return max(sizeClass(n+canaryLen), minCheckedClass)
}

// chkProc is one P's part of a checked heap, mapped off-heap like a
// magazine and, like it, touched only by the goroutine pinned to that P
// (Close and Stats excepted, as for magazines): the quarantine ring of small
// blocks this P freed. The ring's qmask+1 slots follow the header in the same
// mapping.
type chkProc struct {
	qhead, qlen uint32
	qbytes      uintptr
	qclass      [numClasses]uint64 // the ring's blocks by class: census, read by Stats
}

// ringSlot is a block in a P's quarantine ring: its address, with its
// class in the top byte (addresses are below 1<<56), so that the block that
// leaves needs no pagemap load; its record follows from its address. At 8
// bytes a slot, a ring of 1024 blocks is 8 KiB, against 24 with the record's
// address in each slot: live-k pairs (k=8) took 72.5-73.6 ns against
// 74.1-76.9 (BenchmarkCheckedLiveK, interleaved).
type ringSlot uint64

func makeSlot(a uintptr, cl uint8) ringSlot { return ringSlot(uint64(a) | uint64(cl)<<56) }
func (s ringSlot) addr() uintptr            { return uintptr(s & (1<<56 - 1)) }
func (s ringSlot) class() uint8             { return uint8(s >> 56) }

// procBytes is the size of a P's chkProc mapping, ring included.
func (c *checker) procBytes() uintptr {
	return unsafe.Sizeof(chkProc{}) + uintptr(c.qmask+1)*unsafe.Sizeof(ringSlot(0))
}

// slot is slot i of p's ring, i masked with c.qmask.
func (p *chkProc) slot(c *checker, i uint32) *ringSlot {
	return (*ringSlot)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(chkProc{})+uintptr(i&c.qmask)*unsafe.Sizeof(ringSlot(0))))
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

// poisonedWords reports whether the n bytes at a, a multiple of 8, are
// all poisonByte. It ORs the differences together and tests once: in a
// loop of their own, writing and checking an 80-byte block's poison took
// 8 ns with a test per word and takes 5.4 so (within a checked pair the
// difference is below this VM's noise).
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

// smallState is the checker's state for small blocks. Embedded in checker.
type smallState struct {
	mags  [maxProcs]atomic.Pointer[magazine] // per-P caches of underlying blocks, in h.allMags
	procs [maxProcs]atomic.Pointer[chkProc]
	caps  [numClasses]uint32 // magazine capacity per class
	batch [numClasses]uint32 // blocks moved per refill or spill

	// Per-P quarantine bounds: each P's ring holds at most qmaxP blocks and
	// qmaxBytesP bytes, so all of them together hold at most GOMAXPROCS times
	// that.
	qmaxP      uint32
	qmaxBytesP uintptr
	qmask      uint32         // ring slots - 1: a power of two above qmaxP, so no division
	pmap       unsafe.Pointer // h.pmap, one load closer

	table unsafe.Pointer // region 0's part of the record table, h.size bytes

	// The rings' census once Close has unmapped them.
	closedQ [numClasses]uint64

	// Under h.magMu: every ring ever installed, for Stats and Close (a ring
	// Trim has taken from its P is in no procs slot, and still counted);
	// and the rings and magazines Trim emptied, for the next P that needs
	// them (installProc).
	allProcs   []*chkProc
	spareProcs []*chkProc
	spareMags  []*magazine
}

// mag is P pid's magazine, or nil. A P numbered maxProcs or above has none
// (it must not share a lower P's: only pinning guards a magazine), and goes
// to the central lists and the global quarantine.
func (c *checker) mag(pid int) *magazine {
	if uint(pid) >= maxProcs {
		return nil
	}
	return c.mags[pid].Load()
}

// proc is P pid's quarantine ring, or nil; see mag.
func (c *checker) proc(pid int) *chkProc {
	if uint(pid) >= maxProcs {
		return nil
	}
	return c.procs[pid].Load()
}

// initSmall sets up the small-block side of a checked heap: its record
// table, reserved here, and its magazines' and quarantines' sizes.
func (c *checker) initSmall() error {
	h := c.h
	depth := h.opts.MagazineDepth
	if depth == 0 {
		depth = DefaultMagazineDepth
	}
	for cl := 1; cl < numClasses; cl++ {
		if depth > 0 {
			c.caps[cl] = classCap(depth, cl)
		}
		c.batch[cl] = max(c.caps[cl]/2, 1)
	}
	c.qmaxP = uint32(max(quarantineBlocks, 0))
	c.qmask = 1<<bits.Len32(c.qmaxP) - 1
	c.pmap = h.pmap
	c.qmaxBytesP = uintptr(max(quarantineBytes, 0))
	t, err := osmem.Map(h.size)
	if err != nil {
		return fmt.Errorf("%w: %w", errNoMeta, err)
	}
	// NewHeap has not handed the heap out yet: region 0 can still change.
	c.table = t
	h.pages.regions.Load().byPage[0].shadow = t
	h.pages.shadowed = true // later regions get theirs as they are made; all go with their pages
	return nil
}

// rec is the record of the small block that starts at a. recOf and
// allocSmall, the hot paths, do the same inline.
func (c *checker) rec(a uintptr) *smallRec {
	if off := a - c.base; off < c.size {
		return (*smallRec)(unsafe.Add(c.table, off&^(recGranule-1)))
	}
	return c.recFar(a)
}

// recFar is rec for a block outside region 0: the record is at the same
// offset in its region's part of the table.
func (c *checker) recFar(a uintptr) *smallRec {
	r := c.h.pages.regions.Load().byAddress(a)
	return (*smallRec)(unsafe.Add(r.shadow, (a-r.base)&^(recGranule-1)))
}

// recOf returns the record of the small block that address a falls in, and
// whether a is that block's start; nil if a is not in a small block's span.
func (c *checker) recOf(a uintptr) (r *smallRec, start bool, cl uint8) {
	var page uint32
	if off := a - c.base; off < c.size {
		page = uint32(off >> pageShift)
		r = (*smallRec)(unsafe.Add(c.table, off&^(recGranule-1)))
	} else {
		p, ok := c.h.pages.pageOfFar(a)
		if !ok {
			return nil, false, 0
		}
		page, r = p, c.recFar(a)
	}
	e := *(*uint64)(unsafe.Add(c.pmap, uintptr(page)*8))
	cl = uint8(e)
	if cl-1 >= numClasses-1 {
		return nil, false, 0
	}
	// The block's start, as Free's fast path finds it: the offset in the
	// span, divided by the block size with a multiply. Regions are pageSize
	// aligned, so the offset in the page is a's low bits.
	o := uint64(a&(pageSize-1)) | uint64(uint32(e)>>8)<<pageShift
	ci := &classInfos[cl]
	q := o * ci.divMul >> 40
	start = q*uint64(ci.size) == o && q < uint64(ci.blocks)
	// The record does not wait for the division: a start in the same
	// granule as a has it (see recGranule).
	return r, start, cl
}

// recSum seals a record's address and size, keyed by the heap's id.
func (c *checker) recSum(a uintptr, size uint32) uint64 {
	const k1, k2 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
	x := (c.id ^ uint64(a)*k1 ^ uint64(size)) * k2
	return x ^ x>>31
}

// allocSmall allocates a checked small block of n bytes: an underlying block
// of n+canaryLen bytes from this P's magazine (or a refill), its record
// filled in place with the caller's stack. It touches the block and its
// record pinned, with the magazine in service or the heap seen open
// (closing.go).
func (c *checker) allocSmall(n int, zero bool) ([]byte, error) {
	cl := checkedClass(n)
	// The stack is callStack's, walked from this frame, before the pin:
	// intern may have to wait for another goroutine.
	var st stack
	id := intern(&st, st.fill(fpStack(&st.pcs)))
	pid := pin.Pin()
	if m := c.mag(pid); m != nil {
		mc := &m.cls[cl]
		if k := mc.n; k != 0 {
			k--
			a := m.slots[cl][k%maxDepth]
			mc.n = k
			mc.hits++
			c.fillRecord(a, n, cl, id, zero)
			pin.Unpin()
			return bytesAt(a, n), nil
		}
	}
	pin.Unpin()
	a, err := c.refill(cl)
	if err != nil {
		return nil, err
	}
	pin.Pin()
	if c.h.closed.Load() {
		pin.Unpin()
		return nil, ErrClosed
	}
	c.fillRecord(a, n, cl, id, zero)
	pin.Unpin()
	return bytesAt(a, n), nil
}

// fillRecord makes the underlying block a of class cl, which the caller
// alone holds, a live checked block of n bytes allocated at st: its record,
// its canary, its zeroing. Plain stores. Called pinned (see allocSmall).
func (c *checker) fillRecord(a uintptr, n int, cl uint8, st stackID, zero bool) {
	var r *smallRec // rec(a), inline for region 0
	if off := a - c.base; off < c.size {
		r = (*smallRec)(unsafe.Add(c.table, off&^(recGranule-1)))
	} else {
		r = c.recFar(a)
	}
	r.alloc = st
	r.size = uint32(n)
	r.addr = a
	r.sum = c.recSum(a, uint32(n))
	r.free = 0
	r.state = stateLive
	raceAcquire(ptr(a)) // race builds: after the block left the quarantine (race.go)
	canary(c.canaryKey(a), a+uintptr(n), a+uintptr(classSize[cl]), true)
	if zero {
		clear(bytesAt(a, n))
	}
}

// refill takes a batch of class cl from the central list for this P's
// magazine and returns the first block: Heap.refill for the checker's
// magazines.
func (c *checker) refill(cl uint8) (uintptr, error) {
	return c.h.refillFrom(cl, c.batch[cl], c.mag, c.installProc)
}

// installProc gives P pid its magazine and quarantine ring, if it has none.
// Called unpinned.
func (c *checker) installProc(pid int) error {
	if pid >= maxProcs {
		return nil // such a P goes to the central lists and the global quarantine
	}
	h := c.h
	h.magMu.Lock()
	defer h.magMu.Unlock()
	if h.closed.Load() {
		return ErrClosed // as Heap.installMagazine
	}
	if c.mags[pid].Load() != nil {
		return nil
	}
	if k := len(c.spareProcs); k > 0 {
		// Empty, with their census, which Stats keeps summing.
		c.procs[pid].Store(c.spareProcs[k-1])
		c.mags[pid].Store(c.spareMags[k-1])
		c.spareProcs, c.spareMags = c.spareProcs[:k-1], c.spareMags[:k-1]
		return nil
	}
	pp, err := osmem.Map(c.procBytes())
	if err != nil {
		return err
	}
	mp, err := osmem.Map(unsafe.Sizeof(magazine{}))
	if err != nil {
		osmem.Unmap(pp, c.procBytes())
		return err
	}
	m := (*magazine)(mp)
	for cl := 1; cl < numClasses; cl++ {
		m.cls[cl].cap = c.caps[cl]
		m.cls[cl].sampleAt = 0 // unused: the fast path never sees this magazine
	}
	h.addMagazine(m) // Stats and Close count and unmap it
	c.allProcs = append(c.allProcs, (*chkProc)(pp))
	c.procs[pid].Store((*chkProc)(pp))
	c.mags[pid].Store(m)
	return nil
}

// freeSmall frees a, which must be the start of a live small block, and
// reports true; false if a is not in a small block's span (the caller then
// tries the records of large and guarded blocks). It panics with a
// *MemoryError. It reads and writes the block and its record pinned, with
// the heap seen open (closing.go), and reports a bad Free between enter and
// exit.
func (c *checker) freeSmall(a uintptr) bool {
	// The stack is callStack's, walked from this frame, before the pin:
	// intern may have to wait for another goroutine.
	var st stack
	id := intern(&st, st.fill(fpStack(&st.pcs)))
	pid := pin.Pin()
	if c.h.closed.Load() {
		pin.Unpin()
		panic(fmt.Errorf("%w: Free of %#x", ErrClosed, a))
	}
	r, start, cl := c.recOf(a)
	if r == nil {
		pin.Unpin()
		return false
	}
	if !start || !atomic.CompareAndSwapUint32(&r.state, stateLive, stateFreeing) {
		pin.Unpin()
		c.panicFree(a, start, r)
	}
	// From here the record is ours: a racing Free of the same block fails
	// the compare-and-swap above.
	size := r.size
	if r.sum != c.recSum(a, size) || r.addr != a {
		r.state = stateLive // leave the block as it is
		pin.Unpin()
		panic(&MemoryError{Kind: Corrupted, Addr: a, detail: "its metadata was overwritten (checksum mismatch); the block is left as it is"})
	}
	usable := classSize[cl]
	intact := canary(c.canaryKey(a), a+uintptr(size), a+uintptr(usable), false)
	alloc := r.alloc
	r.free = id
	r.state = stateFreed
	if c.poison {
		poisonWords(a, usable)
	}
	raceRelease(ptr(a)) // race builds: to whoever pushes it out of the quarantine (race.go)
	var out uintptr
	if p := c.proc(pid); p != nil { // into the ring within the same pin
		out = c.ringPush(pid, p, a, cl)
		pin.Unpin()
	} else {
		pin.Unpin()
		out = c.quarantineSmall(a, cl)
	}
	var corrupt *MemoryError
	if !intact {
		corrupt = &MemoryError{Kind: Corrupted, Addr: a, Size: int(size),
			detail:     "the bytes past its length were overwritten (an unsafe write past len); the block is freed",
			AllocStack: alloc.String()}
	}
	if out != 0 {
		c.releaseOut(out, corrupt)
	}
	if corrupt != nil {
		panic(corrupt)
	}
	return true
}

// panicFree panics with what is wrong with the Free of a: not a block start
// (start false), or a block whose record r is not live. It reads the
// records between enter and exit (closing.go).
func (c *checker) panicFree(a uintptr, start bool, r *smallRec) {
	if !c.h.enter() {
		panic(fmt.Errorf("%w: Free of %#x", ErrClosed, a))
	}
	defer c.h.exit()
	if !start {
		panic(c.unknownFree(a))
	}
	panic(c.notLive(a, r))
}

// releaseOut gives back the block out that left this P's quarantine ring
// (releaseSmall), between enter and exit, and panics with the write after
// free it found, joined with corrupt. On a closing heap the block goes with
// the heap.
func (c *checker) releaseOut(out uintptr, corrupt *MemoryError) {
	if !c.h.enter() {
		return
	}
	defer c.h.exit()
	if err := c.releaseSmall(out, true); err != nil {
		if corrupt != nil {
			err = joinErrors([]error{corrupt, err})
		}
		panic(err)
	}
}

// notLive builds the error for a Free of the small block a whose record r
// is not live.
func (c *checker) notLive(a uintptr, r *smallRec) *MemoryError {
	switch r.state {
	case stateFreed, stateFreeing:
		e := &MemoryError{Kind: DoubleFree, Addr: a, Size: int(r.size), detail: "the block is not allocated (already freed)"}
		e.AllocStack, e.FreeStack, e.AgainStack = r.alloc.String(), r.free.String(), callStack().String()
		return e
	case stateNone:
		return c.unknownFree(a)
	}
	return &MemoryError{Kind: Corrupted, Addr: a, detail: "its metadata was overwritten (invalid state); the block is left as it is"}
}

// quarantineSmall puts the freed block a of class cl in this P's ring. The
// block that leaves in exchange (the ring was full) is given back here when
// its poison is intact and the magazine has room, the common case, all
// within one pin; otherwise it is returned for releaseSmall. 0: nothing
// left to do.
func (c *checker) quarantineSmall(a uintptr, cl uint8) uintptr {
	for {
		pid := pin.Pin()
		p := c.proc(pid)
		if p == nil {
			pin.Unpin()
			if c.ringless(a, cl, pid) {
				return 0
			}
			continue
		}
		out := c.ringPush(pid, p, a, cl)
		pin.Unpin()
		return out
	}
}

// ringPush is quarantineSmall's work in P pid's ring p, for a caller pinned
// to that P.
func (c *checker) ringPush(pid int, p *chkProc, a uintptr, cl uint8) uintptr {
	size := uintptr(classSize[cl])
	*p.slot(c, p.qhead+p.qlen) = makeSlot(a, cl)
	p.qlen++
	p.qbytes += size
	p.qclass[cl]++
	if p.qlen <= c.qmaxP && p.qbytes <= c.qmaxBytesP {
		return 0
	}
	sl := *p.slot(c, p.qhead)
	out, ocl := sl.addr(), sl.class()
	p.qhead = (p.qhead + 1) & c.qmask
	p.qlen--
	osize := classSize[ocl]
	p.qbytes -= uintptr(osize)
	p.qclass[ocl]-- // leaves the census before the magazine counts it free
	// Race builds: after its Free's poison, and before its next Alloc
	// (race.go).
	raceAcquire(ptr(out))
	if m := c.mag(pid); m != nil && (!c.poison || poisonedWords(out, osize)) {
		mc := &m.cls[ocl]
		if k := mc.n; k < mc.cap {
			raceRelease(ptr(out))
			c.rec(out).state = stateNone
			m.slots[ocl][k%maxDepth] = out
			mc.n = k + 1
			mc.frees++
			return 0
		}
	}
	return out
}

// ringless takes the freed block a of class cl on P pid, which has no
// quarantine ring, between enter and exit (closing.go), and reports whether
// it is done with it: through the global quarantine for a P beyond
// maxProcs; else it makes the P a ring (false: try again), or gives the
// block back at once if none can be made. On a closing heap the block goes
// with the heap.
func (c *checker) ringless(a uintptr, cl uint8, pid int) bool {
	if !c.h.enter() {
		return true
	}
	defer c.h.exit()
	if pid >= maxProcs {
		// No ring for this P: straight through the global one.
		e := qEntry{addr: a, class: cl, kind: kindSmall, bytes: uintptr(classSize[cl]), check: classSize[cl]}
		if err := c.quarantine(e); err != nil {
			panic(err)
		}
		return true
	}
	if err := c.installProc(pid); err != nil {
		// No memory for a ring, or a closing heap: give the block back at
		// once (its poison is checked as it leaves).
		if err := c.releaseSmall(a, true); err != nil {
			panic(err)
		}
		return true
	}
	return false
}

// releaseSmall gives back a small block that left the quarantine: it checks
// the poison, marks the record none and, if giveBack, pushes the block to
// this P's magazine (spilling half of it to the central list when full). It
// returns the write after free it found, if any.
func (c *checker) releaseSmall(a uintptr, giveBack bool) error {
	page, _ := c.h.pages.pageOf(a)
	cl := uint8(*c.h.pages.entry(page))
	usable := int(classSize[cl])
	r, _, _ := c.recOf(a)
	raceAcquire(ptr(a)) // race builds: after its Free's poison (race.go)
	var err error
	if c.poison && !poisonedWords(a, uint32(usable)) {
		waf := &MemoryError{Kind: WriteAfterFree, Addr: a, Size: int(r.size),
			detail:     "a freed block in quarantine was written to",
			AllocStack: r.alloc.String(), FreeStack: r.free.String()}
		if first := firstDiff(bytesAt(a, usable)); first >= 0 {
			waf.detail = fmt.Sprintf("byte %d of the freed block was overwritten (found when it left the quarantine)", first)
		}
		err = waf
	}
	if !giveBack {
		return err
	}
	r.state = stateNone
	raceRelease(ptr(a)) // race builds: to its next Alloc
	c.pushBlock(a, cl)
	return err
}

// pushBlock gives the underlying block a of class cl back through this P's
// magazine, counting its Free: Heap.spill for the checker's magazines.
func (c *checker) pushBlock(a uintptr, cl uint8) {
	h := c.h
	pid := pin.Pin()
	m := c.mag(pid)
	if m == nil {
		pin.Unpin()
		h.central[cl].freeDirect(h, a)
		return
	}
	if m.cls[cl].cap == 0 { // magazines off
		pin.Unpin()
		h.central[cl].freeDirect(h, a)
		return
	}
	var buf [maxDepth / 2]uintptr
	k := m.push(cl, a, c.batch[cl], &buf)
	pin.Unpin()
	if k > 0 {
		h.central[cl].putBatch(h, buf[:k])
	}
}

// flushSmall empties this P's ring and magazine back to the central lists
// and reports whether the ring held any block, with the writes after free
// it found.
func (c *checker) flushSmall() (bool, []error) {
	var out []uintptr
	pid := pin.Pin()
	if p := c.proc(pid); p != nil && p.qlen > 0 {
		out = c.emptyRing(p, nil)
	}
	pin.Unpin()
	errs := c.releaseAll(out)
	// The magazine's blocks too.
	c.h.drainFrom(c.mag)
	return len(out) > 0, errs
}

// drainAllSmall is flushSmall for every P, for Trim: it takes every P's
// ring and magazine out of service, waits until no goroutine can still be
// using one (quiesce), empties them and keeps them as spares
// (Heap.drainAllMagazines does the same for a fast heap's magazines).
func (c *checker) drainAllSmall() (bool, []error) {
	h := c.h
	h.magMu.Lock()
	var procs []*chkProc
	var mags []*magazine
	for i := range c.procs {
		// installProc stores both under magMu, so both are set or neither.
		if p := c.procs[i].Swap(nil); p != nil {
			procs = append(procs, p)
			mags = append(mags, c.mags[i].Swap(nil))
		}
	}
	h.magMu.Unlock()
	if len(procs) == 0 {
		return false, nil
	}
	quiesce()
	var out []uintptr
	for _, p := range procs {
		out = c.emptyRing(p, out)
	}
	for _, m := range mags {
		h.emptyMagazine(m)
	}
	errs := c.releaseAll(out)
	h.magMu.Lock()
	if !h.closed.Load() {
		c.spareProcs = append(c.spareProcs, procs...)
		c.spareMags = append(c.spareMags, mags...)
	}
	h.magMu.Unlock()
	return len(out) > 0, errs
}

// emptyRing takes every block out of ring p, oldest first, and appends
// them to out. The caller owns p: pinned to its P, or p is out of service.
func (c *checker) emptyRing(p *chkProc, out []uintptr) []uintptr {
	out = slices.Grow(out, int(p.qlen)) // a few words per block, rare: Trim and ErrLimit
	for p.qlen > 0 {
		a := p.slot(c, p.qhead).addr()
		p.qhead = (p.qhead + 1) & c.qmask
		p.qlen--
		page, _ := c.h.pages.pageOf(a)
		cl := uint8(*c.h.pages.entry(page))
		p.qbytes -= uintptr(classSize[cl])
		p.qclass[cl]--
		out = append(out, a)
	}
	return out
}

// releaseAll gives back the blocks that left a ring (releaseSmall) and
// returns the writes after free it found.
func (c *checker) releaseAll(out []uintptr) []error {
	var errs []error
	for _, a := range out {
		if err := c.releaseSmall(a, true); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// smallCensus adds the rings' blocks to q, by class. Called by Stats.
func (c *checker) smallCensus(q *[numClasses]uint64) {
	c.h.magMu.Lock()
	defer c.h.magMu.Unlock()
	for _, p := range c.allProcs {
		for cl := 1; cl < numClasses; cl++ {
			// The owner P writes these with plain stores; an aligned 64-bit
			// load never sees a torn value.
			q[cl] += atomic.LoadUint64(&p.qclass[cl])
		}
	}
	for cl := 1; cl < numClasses; cl++ {
		q[cl] += c.closedQ[cl]
	}
}

// outOfService takes every P's magazine and ring out of service, for Close
// (closing.go). Called with h.magMu held.
func (c *checker) outOfService() {
	for i := range c.procs {
		c.procs[i].Store(nil)
		c.mags[i].Store(nil)
	}
}

// closeSmall checks every block in the rings for writes after free, lists
// the live small blocks as leaks, and unmaps the rings and the record table.
// The magazines are in h.allMags: Close unmaps them.
func (c *checker) closeSmall() (errs []error, lives []Leak) {
	h := c.h
	h.magMu.Lock()
	procs := c.allProcs
	c.allProcs, c.spareProcs, c.spareMags = nil, nil, nil
	c.outOfService()
	for _, p := range procs {
		for cl := 1; cl < numClasses; cl++ {
			c.closedQ[cl] += p.qclass[cl]
		}
	}
	h.magMu.Unlock()
	for _, p := range procs {
		for k := uint32(0); k < p.qlen; k++ {
			a := p.slot(c, p.qhead+k).addr()
			if err := c.releaseSmall(a, false); err != nil {
				errs = append(errs, err)
			}
		}
		osmem.Unmap(unsafe.Pointer(p), c.procBytes())
	}
	ph := &c.h.pages
	ph.mu.Lock()
	lastSpan := ph.nextSpan // ids 1..nextSpan have been handed out
	ph.mu.Unlock()
	for id := uint32(1); id <= lastSpan; id++ {
		sp := ph.span(id)
		// A span struct outlives its span; it is current when the pagemap
		// still names it, and then only its carved blocks can be live.
		page, ok := ph.pageOf(sp.start)
		if sp.start == 0 || !ok {
			continue
		}
		if e := *ph.entry(page); uint32(e>>32) != id || uint8(e) != sp.class {
			continue
		}
		size := uintptr(classSize[sp.class])
		for q := uintptr(0); q < uintptr(sp.carved); q++ {
			a := sp.start + q*size
			r := c.rec(a)
			if r.state == stateLive && r.addr == a {
				lives = append(lives, Leak{Addr: r.addr, Size: int(r.size), Stack: r.alloc.String()})
			}
		}
	}
	return errs, lives // Close unmaps the record table with the regions
}
