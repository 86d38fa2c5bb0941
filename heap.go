package offheap

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pin"
)

// Options configures a Heap. The zero Options is a fast heap with magazines of
// the default depth and no limit.
type Options struct {
	// MagazineDepth is how many free blocks each P keeps per size class
	// (fewer for large classes; see MagazineBound). 0 means
	// DefaultMagazineDepth; a negative depth turns magazines off, so every
	// Alloc and Free takes the central lock: the control arm of every speed
	// claim. At most MaxMagazineDepth.
	MagazineDepth int

	// Limit is the most bytes the heap may have mapped from the operating
	// system at once (Stats.MappedBytes). An allocation past it fails with
	// ErrLimit, once the heap has given back the free memory it keeps
	// cached (as Trim does) and tried again. 0 means no limit, as does any
	// value above what the machine has. Either way the heap's address space
	// grows as it needs, up to 16 TiB.
	Limit int64

	// Checked turns on checked mode: double, invalid and foreign frees,
	// writes after free and leaks are reported with allocation stacks. The
	// build tag offheapchecked turns it on for every heap. It costs about
	// 4-5x fast mode's time per Alloc and Free; each block is 8 bytes longer
	// (a canary) and at least 32; a quarantine holds freed blocks (1024 and
	// 8 MiB per P); and the records of small blocks take up to as much
	// memory again as the blocks.
	Checked bool

	// GuardPages, in checked mode, puts every allocation on pages of its own
	// with an inaccessible page after it, and makes its pages inaccessible
	// once freed: a use after free or past the end faults at once. Not in
	// a race build, where nothing faults (see the package doc, Race
	// detector).
	GuardPages bool

	// SampleRate, when positive, gives one allocation in SampleRate the
	// GuardPages treatment in an otherwise fast heap (which does not fault
	// in a race build either).
	SampleRate int

	// ReleaseDelay is how long free pages stay mapped before they are given
	// back to the operating system: each page goes back between ReleaseDelay
	// and ReleaseDelay plus a 64th of it (at least a millisecond) after it
	// was freed, plus the timer's latency. 0 means one second; negative
	// means at once.
	ReleaseDelay time.Duration
}

// Heap is a manual-memory allocator whose memory the garbage collector never
// sees. All methods are safe for concurrent use, except Close, which must not
// run at the same time as any other call on the heap (a program that breaks
// the rule gets ErrClosed from the calls that meet the closing heap: see
// Close).
type Heap struct {
	// Read by every Alloc and Free without a lock. Set by NewHeap; only
	// fastSize changes, at Close (closing.go).
	base uintptr        // start of the first region (region.go)
	size uintptr        // bytes of the first region
	pmap unsafe.Pointer // the page heap's pagemap
	// fastSize is the part of the reservation Free's fast path takes: all
	// of it, or none in checked mode, whose Frees go to freeSlow and on to
	// the checker (checked.go), and none once Close begins, which stores it
	// atomically (Free loads it so). A checked heap's Allocs get there
	// without a flag: its magazines (mags) stay empty, so they take the
	// slow path.
	fastSize uintptr
	key      uint64 // written into the second word of a freed small block (doublefree.go)
	ref      refKey // the heap's tag in its Refs, read with base and fastSize by every Bytes (ref.go)
	mags     [maxProcs]atomic.Pointer[magazine]

	// Fixed at NewHeap.
	magazines bool
	caps      [numClasses]uint32 // blocks a magazine holds per class
	batch     [numClasses]uint32 // blocks moved per refill or spill
	opts      Options

	central [numClasses]central
	pages   pageHeap

	magMu     sync.Mutex  // guards allMags, spareMags, installing magazines, and the closed census
	allMags   []*magazine // every magazine ever installed, for Stats and Close
	spareMags []*magazine // drained by Trim, for the next P that needs one

	magList atomic.Pointer[[]*magazine] // allMags, read without magMu by InUse (census.go)
	reclaim reclaimState                // the last reclaim under the Limit (reclaim.go)

	// The magazines' census, saved by Close before it unmaps them.
	closedMagHits uint64
	closedClass   [numClasses]struct{ hits, frees uint64 }

	// Closing (closing.go): closed is set first by Close; busy holds each
	// P's count of slow-path operations in progress (off-heap), busyFar
	// that of the Ps without a slot; arenas are the arenas whose per-P
	// arrays Close must take out of service.
	closed  atomic.Bool
	closeMu sync.Mutex
	busy    unsafe.Pointer
	busyFar atomic.Int64
	arenaMu sync.Mutex
	arenas  map[weak.Pointer[Arena]]struct{}

	// chk is nil in a fast heap. In checked mode every Alloc and Free
	// reaches it through the slow paths; in a sampled heap (SampleRate
	// without Checked) the slow path hands it the sampled allocations and
	// their frees.
	chk *checker
}

var (
	// ErrLimit is returned (or panicked, by Alloc) when an allocation would
	// take the heap past Options.Limit.
	ErrLimit = errors.New("offheap: heap limit reached")

	// ErrClosed is returned (or panicked) when a closed heap is used.
	ErrClosed = errors.New("offheap: heap is closed")

	// ErrSize is returned (or panicked) for a negative size or one no heap
	// can hold.
	ErrSize = errors.New("offheap: invalid allocation size")
)

const (
	// defaultReserve is the first region of a heap without a large Limit:
	// 64 GiB (less on a 32-bit system, which has no backend and never
	// reserves; the bound only keeps the constant representable). A heap
	// with a Limit above half of it reserves twice the Limit, up to
	// maxFirstRegion, so that its blocks take Free's fast path. Less, down
	// to minReserve, where the system refuses that much.
	defaultReserve      = min(64<<30, math.MaxInt/2+1)
	maxFirstRegion      = min(1<<40, math.MaxInt/2+1)
	minReserve          = 64 << 20
	defaultReleaseDelay = time.Second
)

// NewHeap creates a heap. It reserves address space but commits no memory
// until the first allocation.
func NewHeap(opts Options) (*Heap, error) {
	return newHeap(opts, 0)
}

// newHeap is NewHeap with a first region of first bytes, or of the size
// reserve chooses if first is 0.
func newHeap(opts Options, first uintptr) (*Heap, error) {
	if !osmem.Supported {
		return nil, osmem.ErrUnsupported
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts.Checked = opts.Checked || buildChecked
	h := &Heap{opts: opts, key: newKey(), ref: newRefKey()}
	depth := opts.MagazineDepth
	if depth == 0 {
		depth = DefaultMagazineDepth
	}
	h.magazines = depth > 0 && !opts.Checked && !opts.GuardPages
	for c := 1; c < numClasses; c++ {
		if h.magazines {
			h.caps[c] = classCap(depth, c)
			h.batch[c] = max(h.caps[c]/2, 1)
			h.central[c].depotMax = max(depotBytes/int(h.batch[c]*classSize[c]), minDepotBatches)
		} else {
			h.batch[c] = 1
		}
		h.central[c].class = uint8(c)
	}
	if err := h.mapBusy(); err != nil {
		return nil, err
	}
	if err := h.reserve(opts.Limit, first); err != nil {
		osmem.Unmap(h.busy, maxProcs*busyStride)
		return nil, err
	}
	if opts.Checked || opts.GuardPages || opts.SampleRate > 0 {
		if err := h.initChecked(); err != nil {
			h.Close()
			return nil, err
		}
		if h.chk.all {
			h.fastSize = 0 // every Free to freeSlow, which hands it to the checker
		}
	}
	return h, nil
}

// check reports the first option NewHeap refuses.
func (opts *Options) check() error {
	switch {
	case opts.MagazineDepth > MaxMagazineDepth:
		return fmt.Errorf("offheap: MagazineDepth %d is above MaxMagazineDepth (%d)", opts.MagazineDepth, MaxMagazineDepth)
	case opts.Limit < 0:
		return fmt.Errorf("offheap: negative Limit %d", opts.Limit)
	case opts.SampleRate < 0:
		return fmt.Errorf("offheap: negative SampleRate %d", opts.SampleRate)
	}
	return nil
}

// reserve maps the heap's first region, of size bytes (0: chosen for the
// limit), and reserves its metadata for the largest virtual page space
// (region.go).
func (h *Heap) reserve(limit int64, size uintptr) error {
	if size == 0 {
		size = uintptr(defaultReserve)
		if limit > defaultReserve/2 {
			size = uintptr(min(uint64(limit), maxFirstRegion/2)) * 2
		}
	}
	size = (firstRegionSize(size) + pageSize - 1) &^ (pageSize - 1)
	var base unsafe.Pointer
	var err error
	for {
		if base, err = mapRegion(size); err == nil {
			break
		}
		if size/2 < minReserve {
			return err
		}
		size /= 2 // a system with a tight address-space limit
	}
	pages := uint32(size >> pageShift)
	maxPages := uint64(maxVirtPages)
	var meta unsafe.Pointer
	for {
		if meta, err = osmem.Reserve(metaBytes(maxPages)); err == nil {
			break
		}
		if maxPages/2 <= uint64(pages) {
			unmapRegion(base, size)
			return err
		}
		maxPages /= 2
	}
	ph := &h.pages
	ph.base, ph.size, ph.pages0 = uintptr(base), size, pages
	ph.pmap, ph.metaBytes, ph.maxPages = meta, metaBytes(maxPages), uint32(maxPages)
	ph.spans = unsafe.Add(meta, maxPages*8)
	r := &region{base: uintptr(base), bytes: size, pages: pages}
	if err := ph.commitMeta(r); err != nil {
		unmapRegion(base, size)
		osmem.Unmap(meta, ph.metaBytes)
		return err
	}
	ph.regions.Store(&regionSet{byPage: []*region{r}, byAddr: []*region{r}})
	ph.reservedBytes = size
	h.base, h.size, h.fastSize, h.pmap = uintptr(base), size, size, meta
	epoch := time.Now()
	ph.clock = func() int64 { return int64(time.Since(epoch)) }
	ph.free = make(map[uint32]freeRun)
	ph.freeEnd = make(map[uint32]uint32)
	ph.delay = h.opts.ReleaseDelay
	if ph.delay == 0 {
		ph.delay = defaultReleaseDelay
	}
	ph.tick = int64(max(ph.delay/releaseTicks, minReleaseTick))
	if limit > 0 {
		ph.limit = max(uint64(limit)>>pageShift, 1)
	}
	return nil
}

// metaBytes is the size of the metadata reservation for a virtual space of
// pages pages: a pagemap word per page, then a span struct for each
// minSpanPages pages (and id 0, never used).
func metaBytes(pages uint64) uintptr {
	n := uintptr(pages)*8 + uintptr(pages/minSpanPages+2)*unsafe.Sizeof(span{})
	return (n + osmem.PageSize - 1) &^ (osmem.PageSize - 1)
}

// The process-wide heap: its options until it is made, then the heap.
var defaultHeap struct {
	mu   sync.Mutex
	opts Options
	h    atomic.Pointer[Heap]
}

// Default returns the process-wide heap, created on first use with the
// Options given to SetDefaultOptions, or the zero Options (checked, under the
// offheapchecked build tag). It panics if the system has no off-heap memory
// backend.
func Default() *Heap {
	if h := defaultHeap.h.Load(); h != nil {
		return h
	}
	defaultHeap.mu.Lock()
	defer defaultHeap.mu.Unlock()
	if h := defaultHeap.h.Load(); h != nil {
		return h
	}
	h, err := NewHeap(defaultHeap.opts)
	if err != nil {
		panic(fmt.Sprintf("offheap: creating the default heap: %v", err))
	}
	defaultHeap.h.Store(h)
	return h
}

// SetDefaultOptions sets the Options the process-wide heap is created with,
// for a program that wants a Limit, checked mode or another option on
// Default. Call it before anything uses Default, from main or an init
// function: once Default has created the heap, SetDefaultOptions returns an
// error (nil if opts are the ones the heap was created with). It returns
// NewHeap's error for options NewHeap refuses, and changes nothing then.
func SetDefaultOptions(opts Options) error {
	if err := opts.check(); err != nil {
		return err
	}
	defaultHeap.mu.Lock()
	defer defaultHeap.mu.Unlock()
	if defaultHeap.h.Load() != nil {
		if opts == defaultHeap.opts {
			return nil
		}
		return fmt.Errorf("offheap: SetDefaultOptions after Default created the default heap with %+v; call it before the first use of Default", defaultHeap.opts)
	}
	defaultHeap.opts = opts
	return nil
}

// Alloc returns n zeroed bytes with len and cap n, aligned to 16 bytes (8 for
// n <= 8). It panics with an error whose message starts "offheap:" if n is
// negative, the limit is reached or the heap is closed; TryAlloc returns that
// error instead. Alloc(0) returns an empty, non-nil slice that Free ignores.
//
//go:nosplit
func (h *Heap) Alloc(n int) []byte {
	if a := h.allocFast(n); a != 0 {
		return bytesAt(a, n)
	}
	if c := h.chk; c != nil && c.plainSmall(n) && !h.closed.Load() {
		// Checked mode's small blocks, from here: a frame fewer to walk
		// for the stack. A failure goes on to allocSlow, which says why.
		if b, err := c.allocSmall(n, true); err == nil {
			return b
		}
	}
	b, err := h.allocSlow(n, true)
	if err != nil {
		panic(err)
	}
	return b
}

// AllocUnzeroed is Alloc without the zeroing, for callers that overwrite
// every byte: the contents are whatever the block last held.
//
//go:nosplit
func (h *Heap) AllocUnzeroed(n int) []byte {
	if uint(n)-1 < maxSmall {
		if n <= 8 {
			return h.Alloc(n) // an 8-byte block has no word for the key: zeroing it costs no more
		}
		c := sizeClass(n)
		pid := pin.Pin()
		if m := h.mag(pid); m != nil {
			mc := &m.cls[c]
			// sampleAt: see guard.go (never reached unless SampleRate > 0).
			if k := mc.n; k != 0 && mc.hits != mc.sampleAt {
				k--
				a := m.slots[c][k%maxDepth]
				raceAcquire(ptr(a)) // as in allocFast
				mc.n = k
				mc.hits++
				(*[2]uint64)(ptr(a))[1] = 0 // the double-free key (doublefree.go)
				pin.Unpin()
				return bytesAt(a, n)
			}
		}
		pin.Unpin()
	}
	if c := h.chk; c != nil && c.plainSmall(n) && !h.closed.Load() {
		if b, err := c.allocSmall(n, false); err == nil { // as in Alloc
			return b
		}
	}
	b, err := h.allocSlow(n, false)
	if err != nil {
		panic(err)
	}
	return b
}

// TryAlloc is Alloc returning an error instead of panicking: errors.Is(err,
// ErrLimit), ErrClosed or ErrSize.
func (h *Heap) TryAlloc(n int) ([]byte, error) {
	if a := h.allocFast(n); a != 0 {
		return bytesAt(a, n), nil
	}
	return h.allocSlow(n, true)
}

// allocFast pops a block for a small request from the current P's magazine
// and zeroes it, or returns 0. This and Free's first half are the fast
// path: read them top to bottom.
//
// The fast path's functions (Alloc, AllocUnzeroed, allocFast, Free) are
// nosplit: no stack check in their prologue, which the linker allows since
// their frames are small and every call they make is nosplit or a slow path
// that checks its own; and no safe point before that call, which Free needs
// (see there).
//
//go:nosplit
func (h *Heap) allocFast(n int) uintptr {
	if uint(n)-1 >= maxSmall {
		return 0 // 0, negative or large
	}
	var c uint8
	if n <= 1024 {
		c = sizeToClass8[uint(n+7)>>3]
	} else {
		c = sizeToClass128[uint(n-1024+127)>>7]
	}
	pid := pin.Pin()
	if m := h.mag(pid); m != nil {
		mc := &m.cls[c]
		// sampleAt: see guard.go (never reached unless SampleRate > 0).
		if k := mc.n; k != 0 && mc.hits != mc.sampleAt {
			k--
			a := m.slots[c][k%maxDepth]
			raceAcquire(ptr(a)) // race builds: after the block's last Free (race.go)
			mc.n = k
			mc.hits++
			// Zeroed while pinned, since a racing Close may unmap the block
			// once we are not (closing.go): at most maxSmall bytes, which
			// is what the runtime itself clears between preemption points.
			// The double-free key goes too (doublefree.go): n > 8 bytes
			// from the start reach its word.
			clear(bytesAt(a, n))
			pin.Unpin()
			return a
		}
	}
	pin.Unpin()
	return 0
}

// allocSlow serves every Alloc the fast path did not: an empty magazine,
// magazines off, a large or odd size, a closed heap.
func (h *Heap) allocSlow(n int, zero bool) ([]byte, error) {
	switch {
	case h.closed.Load():
		return nil, ErrClosed
	case n < 0:
		return nil, fmt.Errorf("%w: negative size %d", ErrSize, n)
	case n == 0:
		return []byte{}, nil
	}
	// A refusal by the limit is tried once more after the heap gets back
	// the free memory it keeps (reclaim.go).
	var rc reclaimTry
	for {
		var b []byte
		var err error
		switch {
		case h.chk != nil && h.chk.takes(n): // all in checked mode, the sampled ones otherwise
			b, err = h.allocChecked(n, zero)
		case n > maxSmall:
			b, err = h.allocBig(n, zero)
		default:
			c := sizeClass(n)
			var a uintptr
			if h.magazines {
				a, err = h.refill(c)
			} else {
				var one [1]uintptr
				_, _, err = h.central[c].get(h, one[:])
				a = one[0]
			}
			if err == nil {
				if !h.prepare(a, n, zero) {
					return nil, ErrClosed
				}
				b = bytesAt(a, n)
			}
		}
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, ErrLimit) || !rc.again(h, n) {
			return nil, err
		}
	}
}

// prepare readies the n bytes at a that the central list handed out, unless
// the heap is closed: it zeroes them (the key too, as allocFast does), or
// with zero false clears only the key. A racing Close may have unmapped the
// block since the central lock was released, so prepare is nosplit, as
// Free, and sees the heap open before it touches the block (closing.go):
// memclr is its only call, and is not preemptible.
//
//go:nosplit
//go:noinline
func (h *Heap) prepare(a uintptr, n int, zero bool) bool {
	if h.closed.Load() {
		return false
	}
	raceAcquire(ptr(a)) // race builds: after the block's last Free (race.go)
	if zero {
		clear(bytesAt(a, n))
	} else if n > 8 {
		*(*uint64)(ptr(a + 8)) = 0
	}
	return true
}

// allocChecked serves the allocations the checker takes, between enter and
// exit.
func (h *Heap) allocChecked(n int, zero bool) ([]byte, error) {
	if !h.enter() {
		return nil, ErrClosed
	}
	defer h.exit()
	if c := h.chk; c.plainSmall(n) {
		b, err := c.allocSmall(n, zero)
		if err != nil {
			return c.retrySmall(n, zero, err)
		}
		return b, nil
	}
	return h.chk.alloc(n, zero)
}

// allocBig serves a large block, between enter and exit: it may clear
// gigabytes, too long to hold a P pinned.
func (h *Heap) allocBig(n int, zero bool) ([]byte, error) {
	if !h.enter() {
		return nil, ErrClosed
	}
	defer h.exit()
	a, err := h.allocLarge(n, zero)
	if err != nil {
		return nil, err
	}
	return bytesAt(a, n), nil
}

// Free returns the block that b starts to the heap. b must start where a
// slice returned by this heap's Alloc started; its length does not matter:
// a slice with a nonzero capacity frees the block it starts, b[:0]
// included, and only a slice of capacity 0 (nil, or Alloc(0)'s) is ignored.
// b must not be used afterwards. Free panics, leaving the heap intact, when
// b was not allocated by this heap, does not start at a block, belongs to
// an Arena or a Shared, or is already free (what fast mode checks, and
// what it does not, is in the package doc: What Free checks).
//
//go:nosplit
//go:noinline
func (h *Heap) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	a := addrOf(b)
	// Free is nosplit: up to its first call that can be preempted
	// (freeToCentral, freeSlow), a stop of the world waits for it as for a
	// pinned section. So the pagemap and the block, read after fastSize was
	// seen nonzero (Close zeroes it, then quiesces), stay mapped meanwhile
	// (closing.go).
	if off := a - h.base; off < atomic.LoadUintptr(&h.fastSize) {
		e := *(*uint64)(unsafe.Add(h.pmap, off>>pageShift*8))
		c := uint8(e)
		// The offset in the span.
		o := uint64(off&(pageSize-1)) | uint64(uint32(e)>>8)<<pageShift
		if k := c - 2; k < numClasses-2 { // classes 2 and up: blocks of 16 bytes and more
			// A block start has no remainder: divided by the block size
			// with a multiply.
			ci := &(*[numClasses - 2]classInfo)(classInfos[2:])[k] // classInfos[c], no bounds check
			q := o * ci.divMul >> 40
			if q*uint64(ci.size) != o || q >= uint64(ci.blocks) {
				goto slow
			}
			// The key in the block's second word marks it freed
			// (doublefree.go): finding it sends the Free to the slow
			// path's exact check.
			kw := &(*[2]uint64)(ptr(a))[1]
			if *kw == h.key {
				goto slow
			}
			*kw = h.key
		} else if c != 1 || o%8 != 0 || o/8 >= uint64(classInfos[1].blocks) {
			goto slow // not a small block's start; 8-byte blocks have no second word, so no key
		}
		raceRelease(ptr(a)) // race builds: to the block's next Alloc (race.go)
		pid := pin.Pin()
		if m := h.mag(pid); m != nil {
			mc := &m.cls[c]
			if k := mc.n; k < mc.cap {
				m.slots[c][k%maxDepth] = a
				mc.n = k + 1
				mc.frees++
				pin.Unpin()
				return
			}
		}
		pin.Unpin()
		h.freeToCentral(a, c) // a full or missing magazine, or magazines off
		return
	}
slow:
	if c := h.chk; c != nil && c.all && !h.closed.Load() && c.freeSmall(a) {
		return // checked mode's small blocks: freeSmall here, one frame fewer to walk for its stack
	}
	h.freeSlow(b)
}

// freeSlow handles every Free the fast path did not take: large blocks,
// small blocks of the regions after the first (region.go), the key found, a
// closed heap, and the addresses that are not a block start of this heap,
// which panic.
func (h *Heap) freeSlow(b []byte) {
	a := addrOf(b)
	if !h.enter() {
		panic(fmt.Errorf("%w: Free of %#x", ErrClosed, a))
	}
	defer h.exit()
	page, ok := h.pages.pageOf(a)
	if ok && uint8(*h.pages.entry(page)) == classArena {
		panic(fmt.Sprintf("offheap: Free of %#x, which belongs to an Arena: an arena's memory is freed all at once, by the arena's Reset or Release", a))
	}
	if h.chk != nil && h.chk.owns(a) { // all in checked mode, guarded blocks otherwise
		h.chk.free(a)
		return
	}
	if !ok {
		panic(fmt.Sprintf("offheap: Free of %#x (%d bytes), which this heap did not allocate: %s", a, cap(b), appendMoved))
	}
	e := *h.pages.entry(page)
	c := uint8(e)
	switch {
	case c == classLarge:
		h.freeLarge(a)
		return
	case c-1 >= numClasses-1:
		panic(fmt.Sprintf("offheap: Free of %#x (%d bytes), which is not allocated (already freed, or never handed out)", a, cap(b)))
	}
	// A small block, found as Free's fast path finds one (regions are
	// pageSize aligned, so a's offset in its page is a's low bits).
	o := uint64(a&(pageSize-1)) | uint64(uint32(e)>>8)<<pageShift
	ci := &classInfos[c]
	q := o * ci.divMul >> 40
	if q*uint64(ci.size) == o && q < uint64(ci.blocks) {
		h.freeSmall(a, c)
		return
	}
	start := a - uintptr(o%uint64(ci.size))
	if sharedBlock(start, a) {
		panic(fmt.Sprintf("offheap: Free of %#x, the bytes of a Shared: a Shared is freed by its last Release, not by Free", a))
	}
	panic(fmt.Sprintf("offheap: Free of %#x, which is not the start of a block: it is %d bytes into the %d-byte block at %#x",
		a, a-start, ci.size, start))
}

// freeSmall frees the verified start a of a block of class c whose second
// word holds the key: the exact check, then the key and the block's way to
// the magazine or the central list. Called between enter and exit.
func (h *Heap) freeSmall(a uintptr, c uint8) {
	if c != 1 {
		kw := (*uint64)(ptr(a + 8))
		if *kw == h.key {
			h.checkFree(a, c) // panics if the block is already free
		}
		*kw = h.key
	}
	raceRelease(ptr(a)) // as in Free
	h.freeToCentral(a, c)
}

// freeToCentral frees the verified start a of a block of class c, its key
// written, that the magazine did not take: spilling half of a full
// magazine, or straight to the central list with magazines off or none to
// be had.
func (h *Heap) freeToCentral(a uintptr, c uint8) {
	if !h.magazines || h.spill(a, c) != nil {
		h.central[c].freeDirect(h, a)
	}
}

// freeDirect frees one block straight into the central list and counts it;
// on a closed heap it drops it (see get).
func (c *central) freeDirect(h *Heap, a uintptr) {
	c.mu.Lock()
	if !h.closed.Load() {
		c.putLocked(h, a)
		c.frees.Add(1)
	}
	c.mu.Unlock()
}

// Trim gives free memory back to the operating system now: every P's
// magazine goes back to the central lists, empty spans go back to the page
// heap, and every free page is released. To take the other Ps' magazines it
// waits until no goroutine can be using one, which stops the world briefly
// (see quiesce), as runtime.ReadMemStats does. A checked heap's per-P
// quarantine rings and magazines are emptied the same way, their blocks'
// poison checked as they leave.
func (h *Heap) Trim() {
	if !h.enter() {
		return
	}
	defer h.exit()
	if h.chk != nil {
		h.chk.flush(true) // checked mode: the quarantine's blocks go back first (checked.go)
	}
	h.drainAllMagazines()
	for c := 1; c < numClasses; c++ {
		h.central[c].trim(h)
	}
	h.pages.mu.Lock()
	h.pages.releaseAll()
	h.pages.mu.Unlock()
}

// Close unmaps all of the heap's memory. Every slice it handed out becomes
// invalid: touching one faults. Later calls on the heap, its Arenas and its
// Shareds fail with ErrClosed (or panic with an error wrapping it). Close
// must not run concurrently with other calls on the heap; a program that
// breaks that rule gets the same errors from the calls that meet the
// closing heap, and only its own accesses to the memory may fault. A second
// Close returns nil. In checked mode Close returns a *LeakError when blocks
// are still live.
func (h *Heap) Close() error {
	h.closeMu.Lock()
	defer h.closeMu.Unlock()
	if h.closed.Swap(true) {
		return nil
	}
	// Take every per-P structure out of service and wait until no
	// goroutine can be inside a fast path or a slow path (closing.go).
	h.magMu.Lock()
	for i := range h.mags {
		h.mags[i].Store(nil)
	}
	if h.chk != nil {
		h.chk.outOfService()
	}
	h.magMu.Unlock()
	atomic.StoreUintptr(&h.fastSize, 0) // Free's fast path: see there
	h.arenasOutOfService()
	quiesce()
	h.waitIdle()
	for c := range h.central {
		// Taking the lock is the point: it waits out the operation that
		// holds it, and every later one sees the heap closed (central.get).
		h.central[c].mu.Lock()
		h.central[c].mu.Unlock() //lint:ignore SA2001 the critical section is empty on purpose
	}

	var leaks error
	if h.chk != nil {
		leaks = h.chk.close()
	}
	h.magMu.Lock()
	mags := h.allMags
	for _, m := range mags {
		for c := 1; c < numClasses; c++ {
			h.closedMagHits += m.cls[c].hits
			h.closedClass[c].hits += m.cls[c].hits
			h.closedClass[c].frees += m.cls[c].frees
		}
	}
	h.magMu.Unlock()
	h.pages.mu.Lock()
	h.pages.closed = true
	if h.pages.timer != nil {
		h.pages.timer.Stop()
		h.pages.timer = nil
	}
	h.pages.mu.Unlock()
	var errs []error
	for _, m := range mags {
		errs = append(errs, osmem.Unmap(unsafe.Pointer(m), unsafe.Sizeof(*m)))
	}
	errs = append(errs, h.pages.unmap())
	errs = append(errs, osmem.Unmap(h.busy, maxProcs*busyStride))
	if err := errors.Join(errs...); err != nil {
		return errors.Join(leaks, err)
	}
	return leaks
}

// newSpan makes a span for class c from the page heap.
func (h *Heap) newSpan(c uint8) (uint32, *span, error) {
	ph := &h.pages
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if ph.closed {
		return 0, nil, ErrClosed
	}
	id, ok := ph.newSpanID()
	if !ok {
		return 0, nil, ph.outOfSpace(uint64(classPages[c])<<pageShift, nil)
	}
	first, _, err := ph.alloc(uint32(classPages[c]), func(i uint32) uint64 {
		return uint64(c) | uint64(i)<<8 | uint64(id)<<32
	})
	if err != nil {
		ph.spanIDs = append(ph.spanIDs, id)
		return 0, nil, err
	}
	s := ph.span(id)
	*s = span{start: ph.addr(first), class: c}
	return id, s, nil
}

// freeSpan gives an empty span's pages back to the page heap.
func (h *Heap) freeSpan(id uint32, s *span) {
	ph := &h.pages
	ph.mu.Lock()
	defer ph.mu.Unlock()
	first, _ := ph.pageOf(s.start)
	ph.release(first, uint32(classPages[s.class]))
	ph.spanIDs = append(ph.spanIDs, id)
}

// pagesFor is the number of pages n bytes need, or false if that overflows.
func pagesFor(n int) (uint32, bool) {
	p := (uint64(n) + pageSize - 1) >> pageShift
	return uint32(p), p <= math.MaxUint32 && bits.Len64(p) < 32
}
