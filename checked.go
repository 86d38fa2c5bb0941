package offheap

// Checked mode: Go checks bounds, not lifetimes; this file checks lifetimes.
//
// A checked heap (Options.Checked, Options.GuardPages, or the offheapchecked
// build tag) installs no magazines in h.mags, so every Alloc leaves the fast
// path, and Free's fast path takes none of its addresses (Heap.fastSize is
// 0); past their fast paths, Alloc and Free hand small blocks to the checker
// themselves, and the rest through allocSlow and freeSlow. Checked mode pays
// a pin for the empty magazine on each Alloc, a few ns of a 55 ns pair, so
// that fast mode pays no flag test: 0.3 ns of a 9 ns pair, and a size limit
// read from the heap instead cost 0.1 ns and saved checked mode 1
// (BenchmarkPair64, BenchmarkCheckedPair64, interleaved). A sampled heap
// (Options.SampleRate without Checked) keeps its magazines and sends one
// allocation in about SampleRate to the checker (guard.go).
//
// There are two kinds of checked block, with the same checks and different
// bookkeeping:
//
//   - Small blocks (up to maxSmall-canaryLen bytes, in a heap that checks
//     everything and has no GuardPages) are the common case and must be
//     cheap: no lock, no Go map, no shared cache line on the way
//     (checked_small.go).
//   - Large blocks and guard-page blocks already cost a page-heap lock and,
//     for guarded ones, system calls; they keep the simpler scheme below
//     (sharded Go map, one global quarantine).
//
// # Metadata
//
// A record holds the requested size, the state (none, live, freeing,
// freed), and two stacks of raw PCs, captured on Alloc and on Free by walking
// frame pointers (checked_stack.go) and symbolized only when reported. A
// checksum keyed by the heap's identity (a random per-heap id) seals the
// fields Free acts on: Free verifies it before trusting the record, so a
// stray write that reached it is reported as Corrupted instead of acted on.
//
// A small block's record is in an off-heap record table that mirrors the heap's
// address space, one record per 32 bytes, at the block's own offset
// (checked_small.go): a separate mapping, out of reach of the program's
// overruns into blocks, found with a subtraction and a mask. Free moves the
// state from live to freeing with one compare-and-swap: of two Frees of one
// block, exactly one proceeds, so a double free is found without a lock. The
// stacks are captured straight into the record. Close walks the spans' blocks
// for the records still live: the leaks.
//
// A large or guarded block's record is in a Go map keyed by its start,
// sharded by address under per-shard mutexes, and its checksum also covers
// how the block was obtained.
//
// Next to the block, off-heap, is a trailing canary: the block is allocated
// canaryLen bytes longer than asked, and every byte from the requested length
// to the end of the underlying block is filled with a pattern derived from
// the heap's id and the block's address. Free checks it: an unsafe write past
// len is Corrupted.
//
// # Free and the quarantine
//
// Free finds the record (InvalidFree if there is none or it is not live:
// never allocated, not a block start, or freed long ago; ForeignFree if the
// address lies in another checked heap, found in a process-wide registry of
// checked heaps' address ranges), refuses a freed one (DoubleFree, with both
// stacks), verifies it (Corrupted), then marks it freed, poisons the block
// (every byte poisonByte) and puts it at the back of a FIFO quarantine
// bounded in blocks and in bytes. The block is not reused while it waits
// there. When the quarantine is full its oldest block leaves: the poison is
// checked (a mismatch is a write after free: WriteAfterFree, with both
// stacks, panicked from the Free that pushed it out), the record is dropped
// (state none) and the block goes back to the heap. Close checks every block
// still in quarantine the same way and joins what it finds to its error.
//
// Small blocks wait in a ring of the P that freed them (chkProc), touched
// only while pinned to that P, and leave into that P's magazine of
// underlying blocks, the checker's own, from which the checker's Allocs
// pop: the central lists are reached in batches, as in a fast heap. Each
// P's ring is bounded by quarantineBlocks and quarantineBytes, so all of
// them together hold at most GOMAXPROCS times that; FIFO order holds per P.
// Large and guarded blocks wait in one global FIFO under a lock, with the
// same bounds; when an allocation meets the heap's limit, that FIFO and the
// calling P's ring give their blocks back and the allocation is retried.
// Trim empties every P's ring, as it empties a fast heap's magazines.
//
// Guard-page blocks (guard.go) are not poisoned: their pages become
// inaccessible when freed, so a use after free faults at once.
//
// # Invariants
//
//   - A block has a live or freed record from its Alloc until it leaves the
//     quarantine; only then does the underlying block go back to the heap.
//     So a checked block is never handed out twice while either holder can
//     still free it. A span goes back to the page heap only when all its
//     blocks have, so every record of a free page is none.
//   - Lock order: no checker lock is held while taking a central or page heap
//     lock, and the reverse never happens (the checker is called outside
//     them), so the checker adds no lock cycle. No lock is taken while
//     pinned.
//   - Stats: checked blocks are real blocks of the central lists, the
//     checker's magazines (in h.allMags, so counted like any magazine) or the
//     page heap, and are counted there. A block in quarantine has been freed
//     by the program but not yet by the heap; census adds the quarantines to
//     Frees so the counts stay exact (Stats counts a checked block at the
//     size of its underlying block, canary included).

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrorKind says what a MemoryError caught.
type ErrorKind int

const (
	// DoubleFree is a Free of a block that was already freed.
	DoubleFree ErrorKind = iota + 1
	// InvalidFree is a Free of an address that is not the start of a live
	// block of any checked heap: a slice of the Go heap, b[1:], or a block
	// freed so long ago that the heap has forgotten it.
	InvalidFree
	// ForeignFree is a Free of a block that another heap allocated.
	ForeignFree
	// WriteAfterFree is a write into a block after it was freed, found when
	// the block leaves the quarantine or at Close.
	WriteAfterFree
	// Corrupted is a block whose trailing canary (an unsafe write past its
	// length) or whose metadata was overwritten.
	Corrupted
	// UseAfterFree is a handle to a freed block resolved: Heap.Ref of a
	// freed block, or Heap.Bytes of a Ref to one.
	UseAfterFree
)

// String names the kind in words: "double free", "invalid free", and so on.
func (k ErrorKind) String() string {
	switch k {
	case DoubleFree:
		return "double free"
	case InvalidFree:
		return "invalid free"
	case ForeignFree:
		return "foreign free"
	case WriteAfterFree:
		return "write after free"
	case Corrupted:
		return "corrupted block"
	case UseAfterFree:
		return "use after free"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// MemoryError is what a checked heap's Free panics with (and Close returns,
// for writes after free found in quarantine; Ref and Bytes panic with it for
// a freed block). Recover it with errors.As.
type MemoryError struct {
	Kind       ErrorKind // what went wrong
	Addr       uintptr   // the address freed, or the block written after free
	Size       int       // the block's size in bytes, 0 if unknown
	AllocStack string    // where the block was allocated ("" if unknown)
	FreeStack  string    // where it was first freed, for DoubleFree and WriteAfterFree
	// AgainStack is where the Free that was refused was called, for
	// DoubleFree: the second Free, the one to look at first.
	AgainStack string
	detail     string
}

// Error names the kind, address and size, and prints the stacks.
func (e *MemoryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "offheap: %s of %#x", e.Kind, e.Addr)
	if e.Size > 0 {
		fmt.Fprintf(&b, " (%d bytes)", e.Size)
	}
	if e.detail != "" {
		b.WriteString(": ")
		b.WriteString(e.detail)
	}
	if e.AllocStack != "" {
		b.WriteString("\n\nallocated at:\n")
		b.WriteString(e.AllocStack)
	}
	if e.FreeStack != "" {
		b.WriteString("\nfirst freed at:\n")
		b.WriteString(e.FreeStack)
	}
	if e.AgainStack != "" {
		b.WriteString("\nfreed again at:\n")
		b.WriteString(e.AgainStack)
	}
	return b.String()
}

// Leak is a block still live when its heap was closed.
type Leak struct {
	Addr  uintptr // the block's start
	Size  int     // the size it was allocated with
	Stack string  // where it was allocated
}

// LeakError is what Close returns for a checked (or sampled) heap that still
// has live blocks: every one, by address. A sampled heap knows only its
// sampled blocks.
type LeakError struct {
	Leaks []Leak
}

// maxLeaksShown is how many leaks Error prints with their stacks.
const maxLeaksShown = 10

// Error counts the leaks and prints the first few with their stacks.
func (e *LeakError) Error() string {
	total := 0
	for _, l := range e.Leaks {
		total += l.Size
	}
	var b strings.Builder
	fmt.Fprintf(&b, "offheap: %d blocks (%d bytes) still live at Close", len(e.Leaks), total)
	for i, l := range e.Leaks {
		if i == maxLeaksShown {
			fmt.Fprintf(&b, "\n\n... and %d more", len(e.Leaks)-i)
			break
		}
		fmt.Fprintf(&b, "\n\n%d bytes at %#x, allocated at:\n%s", l.Size, l.Addr, l.Stack)
	}
	return b.String()
}

// BlockInfo describes a checked block: see Heap.Lookup.
type BlockInfo struct {
	Start      uintptr // the block's first byte
	Size       int     // the size it was allocated with
	Freed      bool    // freed, and still in quarantine (its address not yet reused)
	Guarded    bool    // on pages of its own, with a guard page after it
	AllocStack string  // where it was allocated
	FreeStack  string  // where it was freed, if Freed
}

// Lookup reports the checked block that addr falls in (anywhere from its
// start to the end of its underlying block; for a guard-page block, its guard
// page included), live or freed but still in quarantine. It is how to name
// the block behind a fault address (see GuardPages in guard.go). A fast heap,
// a closed heap, and an address of no known block report false.
func (h *Heap) Lookup(addr uintptr) (BlockInfo, bool) {
	c := h.chk
	if c == nil || !h.enter() {
		return BlockInfo{}, false
	}
	defer h.exit()
	start, ok := c.blockStart(addr)
	if !ok {
		return BlockInfo{}, false
	}
	return c.info(start)
}

// allocStack returns where the block containing addr was allocated, or "" if
// the heap does not know (fast mode). Shared uses it to name a handle's
// origin when it is released past zero.
func (h *Heap) allocStack(addr uintptr) string {
	if info, ok := h.Lookup(addr); ok {
		return info.AllocStack
	}
	return ""
}

const (
	// canaryLen is how many bytes a checked block is allocated beyond its
	// length, so that every block has a canary to overrun.
	canaryLen = 8

	// poisonByte fills freed blocks in quarantine.
	poisonByte = 0xdb

	numShards = 16
	poolMax   = 256 // spare records kept per shard
)

// Knobs, variables so that tests can turn them (before NewHeap).
var (
	// checkedPoison turns poisoning and its check on (read by NewHeap); the
	// tests turn it off to show that WriteAfterFree comes from the poison
	// check.
	checkedPoison = true
	// quarantineBlocks and quarantineBytes bound the quarantine.
	quarantineBlocks = 1024
	quarantineBytes  = 8 << 20
)

// How a checked block was obtained, and so how it goes back.
const (
	kindSmall   = iota // a block of size class record.class
	kindLarge          // a large page run (allocLarge)
	kindGuarded        // pages of its own plus a guard page (guard.go)
	kindArena          // an arena's page run, given back by Reset or Release (no record)
)

// A block's state. Zero is none so that the record table of small blocks
// (checked_small.go), a fresh zero mapping, starts with no block.
const (
	stateNone    = iota // no block: never allocated, or given back to the heap
	stateLive           // allocated
	stateFreed          // freed by the program, in quarantine
	stateFreeing        // small blocks: between Free's compare-and-swap and the quarantine
)

// record is a checked block's metadata. Guarded by its shard's mu.
type record struct {
	addr   uintptr
	size   int    // requested length
	usable uint32 // bytes from addr to the end of the underlying block (small, large, guarded: up to the guard page)
	pages  uint32 // guarded: data pages before the guard page
	class  uint8
	kind   uint8
	state  uint8
	sum    uint64 // checksum of the above, keyed by the heap's id
	alloc  stackID
	free   stackID
}

// checksum seals r: every field Free acts on (where the block is, how long,
// how it goes back, whether it is live), keyed by the heap's id. The stacks
// are left out: they are only printed.
func (r *record) checksum(id uint64) uint64 {
	const k1, k2 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
	x := id ^ uint64(r.addr)*k1
	x = (x ^ uint64(r.size)) * k2
	x = (x ^ uint64(r.usable) ^ uint64(r.pages)<<32) * k1
	x = (x ^ uint64(r.class) ^ uint64(r.kind)<<8 ^ uint64(r.state)<<16) * k2
	return x ^ x>>31
}

// shard is one lock's worth of records.
type shard struct {
	mu   sync.Mutex
	recs map[uintptr]*record
	pool []*record // spare records, to spare the garbage collector
	_    [64]byte
}

// qEntry is a freed block waiting in quarantine.
type qEntry struct {
	addr  uintptr
	bytes uintptr // what it holds of the heap: block size, or pages
	check uint32  // bytes of poison to check when it leaves (0: guarded)
	pages uint32  // kindLarge, kindGuarded: pages to give back
	class uint8
	kind  uint8
}

// checker is checked mode's state for one heap.
type checker struct {
	h      *Heap
	id     uint64 // the heap's identity: keys checksums and canaries
	all    bool   // every allocation is checked; false: a sampled fast heap
	guard  bool   // every checked allocation gets guard pages
	rate   uint64 // Options.SampleRate
	poison bool   // checkedPoison at NewHeap
	ticks  atomic.Uint64

	base, size uintptr // the heap's first region (region.go): rec's one-compare case

	shards [numShards]shard

	qmu       sync.Mutex
	qmax      int      // most blocks held
	qmaxBytes uintptr  // most bytes held
	q         []qEntry // FIFO ring of qmax+1 slots
	qhead     int      // index of the oldest entry
	qlen      int
	qbytes    uintptr
	// The quarantine's census: blocks freed by the program but not yet
	// given back, by class, and large and guarded runs.
	qclass      [numClasses]uint64
	qlarge      uint64
	qlargePages uint64

	runMu sync.Mutex
	runs  map[uintptr]uintptr // guarded blocks: first page -> block start
	// spareRuns are the first pages of one-page guarded runs that left the
	// quarantine, kept inaccessible for the next guarded block (guard.go).
	spareRuns []uintptr

	smallState // checked heaps' small blocks (checked_small.go)
}

// initChecked sets up checked mode for h.
func (h *Heap) initChecked() error {
	c := &checker{
		h:         h,
		id:        rand.Uint64() | 1,
		all:       h.opts.Checked || h.opts.GuardPages,
		guard:     h.opts.GuardPages,
		rate:      uint64(h.opts.SampleRate),
		poison:    checkedPoison,
		base:      h.base,
		size:      h.size,
		qmax:      max(quarantineBlocks, 0),
		qmaxBytes: uintptr(max(quarantineBytes, 0)),
		q:         make([]qEntry, max(quarantineBlocks, 0)+1),
		runs:      make(map[uintptr]uintptr),
	}
	for i := range c.shards {
		c.shards[i].recs = make(map[uintptr]*record)
	}
	initDepot()
	if c.all {
		if err := c.initSmall(); err != nil {
			return err
		}
	}
	register(c)
	h.chk = c
	return nil
}

func (c *checker) shard(a uintptr) *shard {
	return &c.shards[(uint64(a>>3)*0x9e3779b97f4a7c15)>>60]
}

// newRecord returns a spare record or a new one. Called with sh.mu held.
func (sh *shard) newRecord() *record {
	if n := len(sh.pool); n > 0 {
		r := sh.pool[n-1]
		sh.pool = sh.pool[:n-1]
		return r
	}
	return new(record)
}

// takes reports whether the checker serves an allocation of n bytes that
// reached the slow path: every one in checked mode, the sampled ones in a
// sampled heap (guard.go).
func (c *checker) takes(n int) bool {
	if c.all {
		return true
	}
	return c.sampleDue(n)
}

// owns reports whether the checker handles the Free of a: every Free in
// checked mode, and the guard-page blocks of a sampled heap.
func (c *checker) owns(a uintptr) bool {
	if c.all {
		return true
	}
	page, ok := c.h.pages.pageOf(a)
	return ok && uint8(*c.h.pages.entry(page)) == classGuarded
}

// alloc serves every allocation the checker takes.
func (c *checker) alloc(n int, zero bool) ([]byte, error) {
	// Decided once: the retry below must not draw the sample again.
	guard := c.guard || !c.all || (c.rate > 0 && c.ticks.Add(1)%c.rate == 0)
	if !guard && n <= maxSmall-canaryLen {
		b, err := c.allocSmall(n, zero)
		if err != nil {
			return c.retrySmall(n, zero, err)
		}
		return b, nil
	}
	st := callStack()
	b, err := c.allocBlock(n, zero, guard, st)
	if errors.Is(err, ErrLimit) && c.flush(false) {
		// The quarantine held the memory the limit refuses: it gave it
		// back, so try once more.
		b, err = c.allocBlock(n, zero, guard, st)
	}
	return b, err
}

// plainSmall reports whether an allocation of n bytes is a small block with
// nothing else to decide: every allocation is checked, none on guard pages,
// and n is from 1 to the largest small size. Heap.Alloc (and allocSlow)
// then call allocSmall themselves, fewer frames to walk for its stack.
func (c *checker) plainSmall(n int) bool {
	return c.all && !c.guard && c.rate == 0 && uint(n)-1 < maxSmall-canaryLen
}

// retrySmall is what allocSmall's caller does when it fails with err: if
// the limit was met, the quarantine gives its blocks back and allocSmall
// tries once more.
func (c *checker) retrySmall(n int, zero bool, err error) ([]byte, error) {
	if errors.Is(err, ErrLimit) && c.flush(false) {
		return c.allocSmall(n, zero)
	}
	return nil, err
}

// allocBlock allocates a checked block of n bytes for a caller at st: on
// guard pages if guard, else a large run (small blocks are allocSmall's).
func (c *checker) allocBlock(n int, zero, guard bool, st stackID) ([]byte, error) {
	if guard {
		return c.allocGuarded(n, zero, st)
	}
	real := n + canaryLen
	a, err := c.h.allocLarge(real, zero, classLarge) // zeroes what may be dirty, as a fast heap's does
	if err != nil {
		return nil, err
	}
	r := record{size: n, kind: kindLarge, usable: uint32(real)}
	r.pages, _ = pagesFor(real)
	if uint64(real) > math.MaxUint32 {
		r.usable = 0 // too long to note: no canary check
	}
	b := bytesAt(a, n)
	r.addr = a
	c.fillCanary(&r)
	c.insert(&r, st)
	return b, nil
}

// insert files the new record r of a live block allocated at st.
func (c *checker) insert(r *record, st stackID) {
	sh := c.shard(r.addr)
	sh.mu.Lock()
	p := sh.newRecord()
	*p = *r
	p.alloc = st
	p.state = stateLive
	p.sum = p.checksum(c.id)
	sh.recs[p.addr] = p
	sh.mu.Unlock()
}

// canary is the byte at offset i of the canary of the block at a.
func (c *checker) canaryKey(a uintptr) uint64 {
	k := (c.id ^ uint64(a)) * 0xff51afd7ed558ccd
	return k ^ k>>33
}

// The canary of a block is the 8-byte key canaryKey(start) repeated, laid
// by address: the byte at address x is byte k>>(8*(x%8)). So the aligned
// middle of a trailer is whole words of k, written and compared a word at a
// time.

// fillCanary fills the bytes of r's block from its length to its end.
func (c *checker) fillCanary(r *record) {
	if int(r.usable) > r.size {
		canary(c.canaryKey(r.addr), r.addr+uintptr(r.size), r.addr+uintptr(r.usable), true)
	}
}

// canaryIntact checks what fillCanary wrote.
func (c *checker) canaryIntact(r *record) bool {
	if int(r.usable) <= r.size {
		return true
	}
	return canary(c.canaryKey(r.addr), r.addr+uintptr(r.size), r.addr+uintptr(r.usable), false)
}

// canary writes (fill) or checks the canary k over [from, to).
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

// free serves every Free the checker owns. It panics with a *MemoryError.
func (c *checker) free(a uintptr) {
	if c.all && c.freeSmall(a) {
		return
	}
	st := callStack()
	sh := c.shard(a)
	sh.mu.Lock()
	r := sh.recs[a]
	if r == nil {
		sh.mu.Unlock()
		panic(c.unknownFree(a))
	}
	if r.sum != r.checksum(c.id) {
		e := &MemoryError{Kind: Corrupted, Addr: a, detail: "its metadata was overwritten (checksum mismatch); the block is left as it is"}
		sh.mu.Unlock()
		panic(e)
	}
	if r.state == stateFreed {
		e := &MemoryError{Kind: DoubleFree, Addr: a, Size: r.size, detail: "the block is not allocated (already freed)"}
		alloc, free := r.alloc, r.free
		sh.mu.Unlock()
		e.AllocStack, e.FreeStack, e.AgainStack = alloc.String(), free.String(), st.String()
		panic(e)
	}
	var corrupt *MemoryError
	if !c.canaryIntact(r) {
		corrupt = &MemoryError{Kind: Corrupted, Addr: a, Size: r.size,
			detail: "the bytes past its length were overwritten (an unsafe write past len); the block is freed"}
		corrupt.AllocStack = r.alloc.String()
	}
	r.state = stateFreed
	r.free = st
	r.sum = r.checksum(c.id)
	e := qEntry{addr: a, class: r.class, kind: r.kind, pages: r.pages}
	switch r.kind {
	case kindSmall:
		e.bytes = uintptr(classSize[r.class])
		e.check = r.usable
	case kindLarge:
		e.bytes = uintptr(r.pages) << pageShift
		e.check = r.usable // 0 for a block too long to note: not poisoned
	case kindGuarded:
		e.bytes = uintptr(r.pages+1) << pageShift
	}
	sh.mu.Unlock()

	if e.kind == kindGuarded {
		c.protectFreed(a, e.pages)
	} else if c.poison {
		poison(bytesAt(a, int(e.check)))
	}
	if err := c.quarantine(e); err != nil {
		if corrupt != nil {
			err = errors.Join(corrupt, err)
		}
		panic(err)
	}
	if corrupt != nil {
		panic(corrupt)
	}
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

// quarantine pushes e and gives back the blocks that leave, oldest first. It
// returns the writes after free it found in them.
func (c *checker) quarantine(e qEntry) error {
	var buf [4]qEntry // usually one leaves for each that enters
	out := buf[:0]
	c.qmu.Lock()
	c.qpush(e)
	for c.qlen > 0 && (c.qlen > c.qmax || c.qbytes > c.qmaxBytes) {
		out = append(out, c.qpop())
	}
	c.qmu.Unlock()
	return joinErrors(c.releaseEntries(out))
}

// releaseEntries gives blocks that left the quarantine back to the heap,
// checking their poison, and returns what the checks found.
func (c *checker) releaseEntries(out []qEntry) []error {
	var errs []error
	for _, e := range out {
		if err := c.release(e, true); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// joinErrors is errors.Join, except that one error stays itself, so that a
// recovered panic value is the *MemoryError.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// flush empties the quarantine, giving every block back, and reports
// whether it held any. It panics with the writes after free it finds.
// Called by Trim, with allPs, and when an allocation meets the heap's limit,
// without: then only the calling P's ring and magazine are emptied, which
// needs no stop of the world (see drainAllSmall).
func (c *checker) flush(allPs bool) bool {
	c.qmu.Lock()
	out := make([]qEntry, 0, c.qlen)
	for c.qlen > 0 {
		out = append(out, c.qpop())
	}
	c.qmu.Unlock()
	errs := c.releaseEntries(out)
	held := c.dropSpareRuns() || len(out) > 0
	if c.all {
		// Small blocks: the per-P rings and magazines.
		var some bool
		var serrs []error
		if allPs {
			some, serrs = c.drainAllSmall()
		} else {
			some, serrs = c.flushSmall()
		}
		held = held || some
		errs = append(errs, serrs...)
	}
	if err := joinErrors(errs); err != nil {
		panic(err)
	}
	return held
}

// qpush adds e at the back of the ring and to the quarantine's census.
// Called with qmu held; the ring always has a free slot (it has qmax+1, and
// quarantine pops down to qmax).
func (c *checker) qpush(e qEntry) {
	c.q[(c.qhead+c.qlen)%len(c.q)] = e
	c.qlen++
	c.qbytes += e.bytes
	if e.kind == kindSmall {
		c.qclass[e.class]++
	} else {
		c.qlarge++
		c.qlargePages += uint64(e.bytes >> pageShift)
	}
}

// qpop removes the oldest entry. Called with qmu held. It leaves the
// quarantine's census before the heap counts the block free: a racing Stats
// may briefly see it live, never freed twice.
func (c *checker) qpop() qEntry {
	e := c.q[c.qhead]
	c.qhead = (c.qhead + 1) % len(c.q)
	c.qlen--
	c.qbytes -= e.bytes
	if e.kind == kindSmall {
		c.qclass[e.class]--
	} else {
		c.qlarge--
		c.qlargePages -= uint64(e.bytes >> pageShift)
	}
	return e
}

// release checks the poison of a block leaving quarantine, drops its record
// and, if giveBack, gives the block back to the heap. It returns the write
// after free it found, if any.
func (c *checker) release(e qEntry, giveBack bool) error {
	if e.kind == kindSmall && c.all {
		return c.releaseSmall(e.addr, giveBack) // its record is in the record table
	}
	var waf *MemoryError
	if e.kind != kindGuarded && c.poison && !poisoned(bytesAt(e.addr, int(e.check))) {
		waf = &MemoryError{Kind: WriteAfterFree, Addr: e.addr, detail: "a freed block in quarantine was written to"}
	}
	sh := c.shard(e.addr)
	sh.mu.Lock()
	r := sh.recs[e.addr]
	var alloc, free stackID
	if r != nil {
		if waf != nil {
			waf.Size = r.size
			alloc, free = r.alloc, r.free
		}
		delete(sh.recs, e.addr)
		if len(sh.pool) < poolMax {
			sh.pool = append(sh.pool, r)
		}
	}
	sh.mu.Unlock()
	if waf != nil {
		waf.AllocStack, waf.FreeStack = alloc.String(), free.String()
		if first := firstDiff(bytesAt(e.addr, int(e.check))); first >= 0 {
			waf.detail = fmt.Sprintf("byte %d of the freed block was overwritten (found when it left the quarantine)", first)
		}
	}
	if !giveBack {
		return nilIfNone(waf)
	}
	h := c.h
	switch e.kind {
	case kindSmall:
		h.central[e.class].freeDirect(h, e.addr)
	case kindLarge:
		h.freeLarge(e.addr, classLarge)
	case kindGuarded:
		c.releaseGuarded(e.addr, e.pages)
	case kindArena:
		h.freeLarge(e.addr, classArena)
	}
	return nilIfNone(waf)
}

// quarantineArena takes back an arena's page run of n bytes at a, which
// Reset or Release gave back: poisoned and quarantined like a freed block
// (it has no record), it goes back to the page heap when it leaves, and a
// write to it meanwhile is a WriteAfterFree. A run too long to note is not
// poisoned, as a long large block.
func (c *checker) quarantineArena(a uintptr, n int) {
	np, _ := pagesFor(n)
	e := qEntry{addr: a, bytes: uintptr(np) << pageShift, pages: np, kind: kindArena}
	if uint64(n) <= math.MaxUint32 {
		e.check = uint32(n)
	}
	if c.poison {
		poison(bytesAt(a, int(e.check)))
	}
	if err := c.quarantine(e); err != nil {
		panic(err)
	}
}

// nilIfNone keeps a nil *MemoryError from becoming a non-nil error.
func nilIfNone(e *MemoryError) error {
	if e == nil {
		return nil
	}
	return e
}

// firstDiff is the offset of the first byte of b that is not poison, or -1.
func firstDiff(b []byte) int {
	for i, x := range b {
		if x != poisonByte {
			return i
		}
	}
	return -1
}

// unknownFree builds the error for a Free of an address with no record.
func (c *checker) unknownFree(a uintptr) *MemoryError {
	if c.h.pages.contains(a) {
		if start, ok := c.blockStart(a); ok && start != a {
			if sharedBlock(start, a) {
				return &MemoryError{Kind: InvalidFree, Addr: a,
					detail: "the bytes of a Shared: a Shared is freed by its last Release, not by Free"}
			}
			if info, ok := c.info(start); ok {
				return &MemoryError{Kind: InvalidFree, Addr: a, Size: info.Size, AllocStack: info.AllocStack,
					detail: fmt.Sprintf("not the start of a block: it is %d bytes into the block at %#x", a-start, start)}
			}
		}
		return &MemoryError{Kind: InvalidFree, Addr: a,
			detail: "not allocated: not a live block of this heap (never handed out, or freed long ago and out of quarantine)"}
	}
	if other := lookupHeap(a); other != nil {
		e := &MemoryError{Kind: ForeignFree, Addr: a, detail: "this heap did not allocate it: the block belongs to another heap"}
		if start, ok := other.blockStart(a); ok {
			if info, ok := other.info(start); ok {
				e.Size, e.AllocStack = info.Size, info.AllocStack
			}
		}
		return e
	}
	return &MemoryError{Kind: InvalidFree, Addr: a,
		detail: "this heap did not allocate it, nor did any other checked heap (Go memory, or a fast heap's): " + appendMoved}
}

// blockStart is the start of the underlying block that address a falls in,
// read from the pagemap; for a guarded block, from the runs table.
func (c *checker) blockStart(a uintptr) (uintptr, bool) {
	ph := &c.h.pages
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if ph.closed {
		return 0, false
	}
	page, ok := ph.pageOf(a)
	if !ok {
		return 0, false
	}
	e := *ph.entry(page)
	switch cl := uint8(e); cl {
	case 0, classArena: // an arena's memory is no block
		return 0, false
	case classLarge, classGuarded:
		for uint32(e)>>8 != 0 && page > 0 {
			page--
			e = *ph.entry(page)
		}
		first := ph.addr(page)
		if cl == classLarge {
			return first, true
		}
		c.runMu.Lock()
		start, ok := c.runs[first]
		c.runMu.Unlock()
		return start, ok
	default:
		_, into := blockIn(a, e, &classInfos[cl])
		return a - uintptr(into), true
	}
}

// info describes the block that starts at start, if the checker knows it.
func (c *checker) info(start uintptr) (BlockInfo, bool) {
	if c.all {
		if r, ok, _ := c.recOf(start); r != nil {
			// A racy read of the record, fine for a report: it is copied
			// before it is formatted.
			st, size, alloc, free := r.state, r.size, r.alloc, r.free
			if !ok || (st != stateLive && st != stateFreed) {
				return BlockInfo{}, false
			}
			info := BlockInfo{Start: start, Size: int(size), Freed: st == stateFreed, AllocStack: alloc.String()}
			if info.Freed {
				info.FreeStack = free.String()
			}
			return info, true
		}
	}
	sh := c.shard(start)
	sh.mu.Lock()
	r := sh.recs[start]
	if r == nil {
		sh.mu.Unlock()
		return BlockInfo{}, false
	}
	info := BlockInfo{Start: start, Size: r.size, Freed: r.state == stateFreed, Guarded: r.kind == kindGuarded}
	alloc, free := r.alloc, r.free
	sh.mu.Unlock()
	info.AllocStack = alloc.String()
	if info.Freed {
		info.FreeStack = free.String()
	}
	return info, true
}

// close reports leaks at Close as a *LeakError, joined with the writes after
// free found in the quarantine, or nil. The blocks stay where they are: Close
// unmaps them all. The quarantine's census stays as it is, so that Stats
// after Close still counts those blocks as freed.
func (c *checker) close() error {
	unregister(c)
	var errs []error
	c.qmu.Lock()
	for i := 0; i < c.qlen; i++ {
		e := c.q[(c.qhead+i)%len(c.q)]
		if err := c.release(e, false); err != nil {
			errs = append(errs, err)
		}
	}
	c.qlen = 0
	c.qmu.Unlock()
	var leaks []Leak
	if c.all {
		serrs, sleaks := c.closeSmall()
		errs = append(errs, serrs...)
		leaks = sleaks
	}
	type live struct {
		addr uintptr
		size int
		st   stackID
	}
	var lives []live
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for a, r := range sh.recs {
			if r.state == stateLive {
				lives = append(lives, live{a, r.size, r.alloc})
			}
		}
		sh.recs = make(map[uintptr]*record)
		sh.pool = nil
		sh.mu.Unlock()
	}
	for _, l := range lives {
		leaks = append(leaks, Leak{Addr: l.addr, Size: l.size, Stack: l.st.String()})
	}
	slices.SortFunc(leaks, func(x, y Leak) int { return cmp.Compare(x.Addr, y.Addr) })
	if len(leaks) > 0 {
		errs = append(errs, &LeakError{Leaks: leaks})
	}
	return joinErrors(errs)
}

// census adds the quarantine to s: those blocks are freed as far as the
// program is concerned. Called by Stats.
func (c *checker) census(s *Stats) {
	var qs [numClasses]uint64
	large, largePages := c.quarantined(&qs)
	for cl := 1; cl < numClasses; cl++ {
		q := qs[cl]
		if q == 0 {
			continue
		}
		cs := &s.Classes[cl-1]
		q = min(q, cs.InUse) // never wrap: see Stats
		cs.Frees += q
		cs.InUse -= q
		s.Frees += q
		s.InUseBytes -= q * uint64(cs.Size)
	}
	s.Frees += large
	s.InUseBytes -= min(largePages<<pageShift, s.InUseBytes)
}

// quarantined adds the small blocks in the quarantines to q by class, and
// returns the large and guarded blocks there and the pages they hold. It
// takes the quarantines' locks and allocates nothing (Stats, InUse).
func (c *checker) quarantined(q *[numClasses]uint64) (large, largePages uint64) {
	if c.all {
		c.smallCensus(q)
	}
	c.qmu.Lock()
	defer c.qmu.Unlock()
	for cl := 1; cl < numClasses; cl++ {
		q[cl] += c.qclass[cl]
	}
	return c.qlarge, c.qlargePages
}

// The registry of checked heaps, for ForeignFree.
var registry struct {
	mu    sync.Mutex
	heaps []*checker
}

func register(c *checker) {
	registry.mu.Lock()
	registry.heaps = append(registry.heaps, c)
	registry.mu.Unlock()
}

func unregister(c *checker) {
	registry.mu.Lock()
	if i := slices.Index(registry.heaps, c); i >= 0 {
		registry.heaps = slices.Delete(registry.heaps, i, i+1)
	}
	registry.mu.Unlock()
}

// lookupHeap returns the checked heap whose address range holds a, or nil.
func lookupHeap(a uintptr) *checker {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, c := range registry.heaps {
		if c.h.pages.contains(a) {
			return c
		}
	}
	return nil
}
