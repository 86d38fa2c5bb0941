package offheap

import (
	"unsafe"

	"github.com/offheap/offheap/internal/pageheap"
)

// record is the metadata of one checked block, whatever its kind. It lives
// off-heap in the checker's record table, at the address computed from the
// block's start, never next to the block: an overrun of a block cannot
// reach it. The garbage collector does not see it; the stacks are code
// addresses, not Go pointers, so that is safe.
type record struct {
	// state is stateNone, stateLive, stateFreeing or stateFreed. Free moves
	// it from live with a compare-and-swap, so of two Frees of one block
	// exactly one proceeds: a double free is found without a lock. Every
	// other transition is made by the block's sole owner (the allocating
	// goroutine, the freeing one, or the quarantine's) with a plain store.
	state uint32
	alloc stackID // where it was allocated
	free  stackID // where it was freed; 0 while live
	_     uint32
	size  uint64 // the length it was allocated with
	sum   uint64 // seal(start, size): a stray write to either is Corrupted
}

// A block's state. Zero is none, so that the record table, a fresh zero
// mapping, starts with no block, as do pages the system gave back.
const (
	stateNone    = iota // no block: never allocated, or given back to the heap
	stateLive           // allocated
	stateFreed          // freed by the program, in quarantine
	stateFreeing        // between Free's compare-and-swap and the quarantine
)

// The record table mirrors the heap's address space: one record for each
// recGranule bytes, the record of the block that starts in them, at the
// same offset in the table as the block's granule in the heap. A checked
// block is at least recGranule bytes (minCheckedClass, and a page run's
// block has pages of its own), so no two start in one granule. Finding a
// block's record is a subtraction and a mask, where reading the pagemap,
// dividing by the block size and looking the span up took a chain of three
// loads and a multiply (BenchmarkCheckedPair64).
//
// Each region of the heap has its own part of the table, the
// same size, mapped with it (MAP_NORESERVE) and unmapped at Close: region 0's
// is c.table, found with one compare; a later region's is found as its
// blocks are (recFar). Its pages are committed as records are written: at
// most as many bytes as the heap's small blocks use at their peak, fewer
// for larger blocks (a 4 KiB page of records covers 4 KiB of blocks; one
// 16 KiB block has one record). The page heap releases a run's records with
// its pages (region.shadow). A record whose block went back to the heap has
// state stateNone, and so has every record of a fresh or released page.
const (
	recGranule = 32
	recSize    = unsafe.Sizeof(record{})
)

// A record fills its granule.
var _ [recGranule - recSize]byte
var _ [recSize - recGranule]byte

// rec is the record of the block that starts at a.
func (c *checker) rec(a uintptr) *record {
	if off := a - c.base; off < c.size {
		return (*record)(unsafe.Add(c.table, off&^(recGranule-1)))
	}
	return c.recFar(a)
}

// recFar is rec for a block outside region 0: the record is at the same
// offset in its region's part of the table.
func (c *checker) recFar(a uintptr) *record {
	r := c.h.pages.Regions.Load().ByAddress(a)
	return (*record)(unsafe.Add(r.Shadow, (a-r.Base)&^(recGranule-1)))
}

// seal is a record's seal of its block's start and length, keyed by the
// heap's id.
func (c *checker) seal(a uintptr, size uint64) uint64 {
	const k1, k2 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
	x := (c.id ^ uint64(a)*k1 ^ size) * k2
	return x ^ x>>31
}

// fill makes the record of the block at a, which the caller alone holds,
// that of a live block of size bytes allocated at st. Plain stores.
func (c *checker) fill(a uintptr, size uint64, st stackID) {
	var r *record // rec(a), inline for region 0: fill is on every checked Alloc
	if off := a - c.base; off < c.size {
		r = (*record)(unsafe.Add(c.table, off&^(recGranule-1)))
	} else {
		r = c.recFar(a)
	}
	r.alloc = st
	r.size = size
	r.sum = c.seal(a, size)
	r.free = 0
	r.state = stateLive
}

// live reports whether r is the intact record of a live block at a.
func (c *checker) live(r *record, a uintptr) bool {
	return r.state == stateLive && r.sum == c.seal(a, r.size)
}

// smallRecord returns the record of the small block that address a falls
// in, whether a is that block's start, and the block's class; nil if a is
// not in a small block's span. It reads the pagemap, so its caller is
// pinned with the heap seen open, or between enter and exit.
func (c *checker) smallRecord(a uintptr) (r *record, start bool, cl uint8) {
	var page uint32
	if off := a - c.base; off < c.size {
		page = uint32(off >> pageShift)
		r = (*record)(unsafe.Add(c.table, off&^(recGranule-1)))
	} else {
		p, ok := c.h.pages.PageOfFar(a)
		if !ok {
			return nil, false, 0
		}
		page, r = p, c.recFar(a)
	}
	e := pageheap.PageWordAt(c.pmap, uintptr(page))
	cl = pageheap.WordClass(e)
	if !isSmall(cl) {
		return nil, false, 0
	}
	ci := &classInfos[cl]
	q, into := blockIn(a, e, ci)
	// The record does not wait for the division: a start in the same
	// granule as a has it (see recGranule).
	return r, into == 0 && q < uint64(ci.blocks), cl
}

// blockOf finds the checked block that address a falls in (anywhere from
// its start to the end of its underlying block or run): its start, its
// pagemap class and its record. r is nil when a is in no block with a
// record: a free page, an arena's memory, a span's tail, a profiled
// sample, outside the heap. What is at a is placeOf's. Called
// between enter and exit: for a run it takes the page heap's lock.
func (c *checker) blockOf(a uintptr) (start uintptr, cl uint8, r *record) {
	switch p := c.h.placeOf(a); p.kind {
	case placeSmall, placeInSmall, placeShared, placeRun, placeInRun:
		if p.start == 0 || p.class == pageheap.ClassSampled {
			return 0, 0, nil
		}
		return p.start, p.class, c.rec(p.start)
	case placeGuarded:
		first, _, ok := c.h.pages.RunHolding(a)
		if !ok {
			return 0, 0, nil
		}
		if r := c.rec(a); guardBase(a) == first && r.state != stateNone && r.sum == c.seal(a, r.size) {
			return a, pageheap.ClassGuarded, r // a is the block's start: Ref and Bytes look no further
		}
		start, r := c.guardedBlock(first)
		return start, pageheap.ClassGuarded, r
	}
	return 0, 0, nil // a free page, or an arena's memory, which is no block
}

// blockEnd is the end of the bytes a checked block of size bytes at a of
// pagemap class cl may use: its class's block (small), its canary (large),
// its guard page (guarded). The canary fills the bytes from size to there.
func (c *checker) blockEnd(a uintptr, cl uint8, size uint64) uintptr {
	switch cl {
	case pageheap.ClassLarge:
		return a + uintptr(size) + canaryLen
	case pageheap.ClassGuarded:
		return c.guardPage(guardBase(a))
	}
	return a + uintptr(classSize[cl])
}

// canaryLen is how many bytes a checked block is allocated beyond its
// length, so that every block has a canary to overrun.
const canaryLen = 8

// canaryKey is the 8-byte pattern of the canary of the block at a.
func (c *checker) canaryKey(a uintptr) uint64 {
	k := (c.id ^ uint64(a)) * 0xff51afd7ed558ccd
	return k ^ k>>33
}

// canary writes (fill) or checks the canary k over [from, to). The canary
// of a block is the 8-byte key canaryKey(start) repeated, laid by address:
// the byte at address x is byte k>>(8*(x%8)). So the aligned middle of a
// trailer is whole words of k, written and compared a word at a time.
func canary(k uint64, from, to uintptr, fill bool) bool {
	x := from
	for ; x < to && (x%8 != 0 || to-x < 8); x++ {
		b := (*byte)(ptr(x))
		if fill {
			*b = byte(k >> (x % 8 * 8))
		} else if *b != byte(k>>(x%8*8)) {
			return false
		}
	}
	for ; to-x >= 8; x += 8 {
		w := (*uint64)(ptr(x))
		if fill {
			*w = k
		} else if *w != k {
			return false
		}
	}
	for ; x < to; x++ {
		b := (*byte)(ptr(x))
		if fill {
			*b = byte(k >> (x % 8 * 8))
		} else if *b != byte(k>>(x%8*8)) {
			return false
		}
	}
	return true
}
