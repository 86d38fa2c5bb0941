package offheap

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"github.com/offheap/offheap/internal/osmem"
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
	// cached (as Trim does) and tried again. 0 means no limit. A Limit
	// bounds mapped bytes, not the machine's memory: an untouched block
	// maps its whole size and costs no memory, so a Limit above what the
	// machine has still refuses a block larger than the Limit that 0
	// grants. Either way the heap's address space grows as it needs, up to
	// 16 TiB.
	Limit int64

	// Checked turns on checked mode: double, invalid and foreign frees,
	// writes after free and leaks are reported with allocation stacks. The
	// build tag offheapchecked turns it on for every heap. It costs several
	// times fast mode's time per Alloc and Free, for the two stacks, the
	// record and the quarantine each block gets (docs/benchmarks.md,
	// Checked mode's cost, has the figures); each block is 8 bytes longer
	// (a canary) and at least 32; a quarantine holds freed blocks (up to
	// 1024 blocks and 8 MiB per P, and as many again of large blocks); and
	// the records of small blocks take up to as much memory again as the
	// blocks.
	Checked bool

	// GuardPages puts every allocation on pages of its own with an
	// inaccessible page after it, and makes its pages inaccessible once
	// freed: a use after free or past the end faults at once. It implies
	// Checked, whose records name the block behind a fault; a fast heap
	// guards every allocation with GuardOneIn 1. Not in a race build,
	// where nothing faults (see the package doc, Race detector).
	GuardPages bool

	// GuardOneIn, when positive, gives one allocation in GuardOneIn (on
	// average) the GuardPages treatment in an otherwise fast heap: a use after
	// free or a write past the end of a sampled block faults where it happens,
	// in production. The process then dies printing the runtime's "unexpected
	// fault address 0x...", "fatal error: fault" and "[signal SIGSEGV ...]",
	// and the faulting goroutine's traceback, which shows the access but not
	// the block's history; a goroutine that runs with
	// debug.SetPanicOnFault(true) gets a panic instead, which FaultError turns
	// into a *MemoryError with the stacks of the block's allocation and free.
	// A sample costs two mprotects and a page fault (microseconds, where a
	// fast pair costs nanoseconds: docs/benchmarks.md). The heap maps a pool
	// of 32 guarded pages for its samples, 512 KiB counted in MappedBytes and
	// against the Limit, resident only where a sample is; while a sampled
	// block's page waits in the pool after its Free, about the time 31 more
	// samples take, touching it faults too.
	//
	// 50000 is a production rate: a sample's system calls, spread over
	// 50000 allocations, cost a 64-byte Alloc+Free pair little (the figures
	// for 10000 to 50000 are in docs/benchmarks.md, GuardOneIn), and a server
	// that allocates a million blocks a second puts 72,000 blocks an hour
	// on guard pages, each of whose uses after free (within the pool's
	// window) and overruns faults: a bug that touches a freed or overrun
	// block once a second is caught 0.07 times an hour (3600/50000): with
	// probability 7% in an hour on one server, 88% on a fleet of 30. The
	// pool's window there is about 1.5 s (31 samples at 20 a second). In a
	// race build nothing faults (see the package doc, Race detector).
	GuardOneIn int

	// ProfileBytes is the average number of bytes allocated between two
	// samples of the heap's allocation profile (WriteProfile). 0 means
	// DefaultProfileBytes (512 KiB, as runtime.MemProfileRate); a negative
	// rate turns profiling off. Sampling costs the fast path nothing; a
	// sample records a stack at its Alloc and drops it at its Free, and a
	// sampled small block takes a page of its own while it lives
	// (profile.go). As
	// in the Go runtime, a block's odds of a sample grow with its size: one
	// 64-byte block in 8192 is sampled, one 64 KiB block in 9, one 256 KiB
	// block in 2.5. So at the default rate a 64-byte Alloc+Free pair costs
	// what it costs unprofiled, and pairs of tens of KiB and more cost
	// several times as much (BenchmarkPairSizes against its arm noprof; the
	// figures are in docs/benchmarks.md, ProfileBytes): a program
	// whose hot loop allocates and frees blocks of tens of KiB takes that
	// back with a larger rate, or a negative one. A checked heap does not
	// profile.
	ProfileBytes int

	// HugePages puts the heap's memory on 2 MiB transparent huge pages
	// where it is dense, which makes random access over a large heap
	// faster (fewer TLB misses; docs/DESIGN.md has the figures). A block
	// of 2 MiB or more is on huge pages when Alloc (or a Realloc that
	// grows or moves it) returns: each whole 2 MiB of it is made a huge
	// page then (MADV_COLLAPSE), before the program touches it, so it is
	// never read through small pages first. That Alloc takes a few ms per 2 MiB (about 0.3-8 s per GiB on a busy
	// 2-core VM), in place of the faults of the first touch, which then
	// costs nothing, and puts the whole block in memory at once (the
	// memory MappedBytes counts for it anyway). Smaller blocks are faulted
	// in as small pages; a background pass, once allocation pauses for
	// 200 ms (or 2 s after it began), collapses each 2 MiB range whose
	// small pages are all in memory into a huge page, copying its 2 MiB: a
	// few ms of one CPU per huge page, during which the process's page
	// faults wait, so the pass rests four times as long between collapses;
	// while it works, random reads of the ranges it collapses can take
	// several times as long as without HugePages (docs/DESIGN.md, Huge
	// pages at allocation), which blocks of 2 MiB or more never see.
	// New spans and blocks go first into the fullest 2 MiB ranges that
	// have room, and blocks of 2 MiB or more start on a range, so that free
	// memory gathers in whole ranges (docs/DESIGN.md, Big heaps). The
	// release timer then gives back a huge page's free pages only once all
	// of it is free, so a partly used huge page keeps its free pages mapped
	// (they count in MappedBytes and against the Limit) until Trim, the
	// Limit or its last page's Free. HugePageBytes says how much of the
	// heap is on huge pages. It does nothing on kernels before Linux 6.1
	// (no MADV_COLLAPSE), with THP disabled (transparent_hugepage/enabled
	// "never"), where huge pages are not 2 MiB, and in race builds. Off by
	// default: the collapse costs CPU, and the kept free pages memory.
	HugePages bool

	// ReleaseDelay is how long free pages stay mapped before they are given
	// back to the operating system: each page goes back between ReleaseDelay
	// and ReleaseDelay plus a 64th of it (at least a millisecond) after it
	// was freed, plus the timer's latency. 0 means one second; negative
	// means at once; more than 100 years (math.MaxInt64 included) means
	// never: only Trim, and a heap at its Limit, give free pages back.
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
	// without a flag: its magazines decline every allocation
	// (classStack.sampleAt), so they take the slow path.
	fastSize uintptr
	key      uint64    // written into the second word of a freed small block (doublefree.go)
	ref      refKey    // the heap's tag in its Refs, read with base and fastSize by every Bytes (ref.go)
	mags     magazines // per-P: the fast path reads mags.at

	opts    Options // fixed at NewHeap
	_       [centralPad]byte
	central [numClasses]central // on cache lines of their own (centralPad)
	caches  cacheSet            // the Locals' stacks and census (local.go)
	links   listKeys            // the keys of the spans' free lists (freelist.go)
	pages   pageHeap
	reclaim reclaimState // the last reclaim under the Limit (reclaim.go)

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
	// reaches it through the slow paths; in a sampled heap (GuardOneIn
	// without Checked) the slow path hands it the sampled allocations and
	// their frees.
	chk *checker

	// prof is the allocation profile (profile.go), nil if the heap does
	// not profile.
	prof *profiler
}

// centralPad starts Heap.central on a cache line: a Heap, larger than a
// page, is page-aligned by the Go allocator, and each central is three
// lines long. It counts the fields before central, base to opts; the
// assertion below holds it to them.
const centralPad = (64 - (3*unsafe.Sizeof(uintptr(0))+unsafe.Sizeof(unsafe.Pointer(nil))+8+
	unsafe.Sizeof(refKey{})+unsafe.Sizeof(magazines{})+unsafe.Sizeof(Options{}))%64) % 64

var _ = [1]struct{}{}[unsafe.Offsetof(Heap{}.central)%64]

var (
	// ErrLimit is returned (or panicked, by Alloc) when an allocation would
	// take the heap past Options.Limit, wrapped in an error that says how
	// many bytes were asked for, how many more that needed mapped, and how
	// many of the Limit's were mapped: test it with errors.Is.
	ErrLimit = errLimit

	// ErrClosed is returned (or panicked) when a closed heap is used.
	ErrClosed = errClosed

	// ErrSize is returned (or panicked) for a negative size or one no heap
	// can hold.
	ErrSize = errors.New("offheap: invalid allocation size")

	// ErrAddressSpace is returned (or panicked) when the heap's address
	// space cannot grow to hold an allocation: one heap spans at most 16
	// TiB, or the system refused more (its error is wrapped too). No Limit
	// was reached: freeing memory, or another heap, makes room.
	ErrAddressSpace = errAddressSpace
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
	opts.Checked = opts.Checked || opts.GuardPages || buildChecked
	h := &Heap{opts: opts, key: newKey(), ref: newRefKey(), links: newListKeys()}
	h.mags.init(opts.MagazineDepth, &h.central)
	h.caches.init(opts.MagazineDepth)
	for c := 1; c < numClasses; c++ {
		h.central[c].class = uint8(c)
	}
	if err := h.mapBusy(); err != nil {
		return nil, err
	}
	checked := opts.Checked || opts.GuardOneIn > 0 // GuardPages set Checked above
	if !opts.Checked {
		h.startProfile(opts.ProfileBytes) // sampling.go
	}
	if err := h.reserve(opts.Limit, first, checked); err != nil {
		osmem.Unmap(h.busy, maxProcs*busyStride)
		return nil, err
	}
	if checked {
		h.initChecked()
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
	case opts.GuardOneIn < 0:
		return fmt.Errorf("offheap: negative GuardOneIn %d", opts.GuardOneIn)
	}
	return nil
}

// reserve maps the heap's first region, of size bytes (0: chosen for the
// limit), and reserves its metadata for the largest virtual page space
// (region.go).
func (h *Heap) reserve(limit int64, size uintptr, shadowed bool) error {
	if size == 0 {
		size = uintptr(defaultReserve)
		if limit > defaultReserve/2 {
			size = uintptr(min(uint64(limit), maxFirstRegion/2)) * 2
		}
	}
	size = alignUp(firstRegionSize(size), osPageBytes)
	var base, shadow unsafe.Pointer
	var err error
	for {
		if base, err = mapRegion(size); err == nil {
			if !shadowed {
				break
			}
			if shadow, err = mapShadow(size); err == nil {
				break
			}
			unmapRegion(base, size)
		}
		if size/2 < minReserve {
			return err
		}
		size /= 2 // a system with a tight address-space limit
	}
	unmap := func() {
		unmapRegion(base, size)
		if shadow != nil {
			osmem.Unmap(shadow, size)
		}
	}
	pages := uint32(size >> pageShift)
	maxPages := uint64(maxVirtPages)
	var meta unsafe.Pointer
	for {
		if meta, err = osmem.Reserve(metaBytes(maxPages)); err == nil {
			break
		}
		if maxPages/2 <= uint64(pages) {
			unmap()
			return err
		}
		maxPages /= 2
	}
	// The pagemap and span array are written a few words at a time, and
	// given back in system pages (releasePagemap): a transparent huge page
	// would hold a whole 2 MiB resident for a word and keep it so. Kernels
	// without transparent huge pages refuse the advice, which they do not
	// need.
	_ = osmem.NoHugePages(meta, metaBytes(maxPages))
	ph := &h.pages
	ph.base, ph.size, ph.pages0 = uintptr(base), size, pages
	ph.pmap, ph.metaBytes, ph.maxPages = meta, metaBytes(maxPages), uint32(maxPages)
	ph.spans = unsafe.Add(meta, maxPages*8)
	r := &region{base: uintptr(base), bytes: size, pages: pages, shadow: shadow}
	if err := ph.commitMeta(r); err != nil {
		unmap()
		osmem.Unmap(meta, ph.metaBytes)
		return err
	}
	ph.shadowed = shadowed
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
	if h.opts.HugePages {
		ph.initHuge()
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

// Trim gives free memory back to the operating system now: every P's
// magazine goes back to the central lists, empty spans go back to the page
// heap, and every free page is released but those that share an OS page
// larger than 8 KiB with a page in use (see the package doc, Page sizes).
// To take the other Ps' magazines it waits until no goroutine can be using
// one, which stops the world briefly (see quiesce), as runtime.ReadMemStats
// does. A checked heap's per-P quarantine rings and magazines are emptied
// the same way, their blocks' poison checked as they leave. The blocks a
// Local holds stay with it: its owner may be using them (Local.Flush gives
// them back).
func (h *Heap) Trim() {
	if !h.enter() {
		return
	}
	defer h.exit()
	if c := h.chk; c != nil {
		c.flush(true) // checked mode: the quarantine's blocks go back first (checked.go)
	}
	h.drainAllMagazines()
	for c := 1; c < numClasses; c++ {
		h.central[c].trim(h)
	}
	if p := h.prof; p != nil {
		p.dropStash(&h.pages) // profile.go
	}
	h.pages.trim()
}
