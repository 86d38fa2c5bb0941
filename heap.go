package offheap

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"github.com/offheap/offheap/internal/callstack"
	"github.com/offheap/offheap/internal/osmem"
	"github.com/offheap/offheap/internal/pageheap"
)

// Options configures a Heap. The zero Options is a fast heap with magazines of
// the default depth and no limit.
type Options struct {
	// MagazineDepth is how many free blocks each P keeps per size class
	// (see MagazineBound). 0 means DefaultMagazineDepth; negative turns
	// magazines off. At most MaxMagazineDepth.
	MagazineDepth int

	// Limit is the most bytes the heap may have mapped at once
	// (Stats.MappedBytes); past it an allocation fails with ErrLimit, once
	// the heap has given back the free memory it keeps. 0 means no limit.
	Limit int64

	// Checked turns on checked mode, for tests: misuse and leaks are
	// reported with stacks, at several times fast mode's cost. The
	// offheapchecked build tag turns it on for every heap.
	Checked bool

	// GuardPages puts every block on pages of its own, with an inaccessible
	// page after it and its pages made inaccessible once freed, so that a
	// use after free or past the end faults at once. It implies Checked.
	GuardPages bool

	// GuardOneIn, when positive, guards one allocation in GuardOneIn as
	// GuardPages does, in an otherwise fast heap: 50000 suits production
	// (docs/guide.md). A fault kills the process unless its goroutine runs
	// with debug.SetPanicOnFault(true) (see FaultError).
	GuardOneIn int

	// ProfileBytes is the average number of bytes allocated between two
	// samples of the allocation profile (WriteProfile). 0 means
	// DefaultProfileBytes; negative turns profiling off.
	ProfileBytes int

	// HugePages puts dense memory on 2 MiB transparent huge pages, for
	// fewer TLB misses, at a cost in CPU and in free pages kept mapped
	// (docs/guide.md). HugePageBytes says how much is on huge pages.
	HugePages bool

	// ReleaseDelay is how long free pages stay mapped before they go back
	// to the operating system. 0 means one second; negative means at once;
	// more than 100 years means never (only Trim and the Limit release).
	ReleaseDelay time.Duration
}

// Heap is a manual-memory allocator whose memory the garbage collector never
// sees. Its methods are safe for concurrent use, except Close.
type Heap struct {
	// Read by every Alloc and Free without a lock. Set by NewHeap; only
	// fastSize changes, at Close.
	base uintptr        // start of the first region
	size uintptr        // bytes of the first region
	pmap unsafe.Pointer // the page heap's pagemap
	// fastSize is the part of the reservation Free's fast path takes: all
	// of it, or none in checked mode, whose Frees go to freeSlow and on to
	// the checker, and none once Close begins, which stores it
	// atomically (Free loads it so). A checked heap's Allocs get there
	// without a flag: its magazines decline every allocation
	// (classStack.sampleAt), so they take the slow path.
	fastSize uintptr
	key      uint64    // written into the second word of a freed small block
	ref      refKey    // the heap's tag in its Refs, read with base and fastSize by every Bytes
	mags     magazines // per-P: the fast path reads mags.at

	opts    Options // fixed at NewHeap
	_       [centralPad]byte
	central [numClasses]central // on cache lines of their own (centralPad)
	caches  cacheSet            // the Locals' stacks and census
	links   listKeys            // the keys of the spans' free lists
	pages   pageheap.Heap
	reclaim reclaimState // the last reclaim under the Limit

	// Closing: closed is set first by Close; busy holds each
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
	// checkAlloc and checkFree take those allocations and Frees, and
	// checkLive says whether a live block of the checker's starts at a
	// (Realloc asks before it copies one): the checker is the layer above
	// the Heap API, which calls it only through these (nil in a fast
	// heap). st is the caller's stack, walked in the Heap API's frame.
	checkAlloc func(n int, zero bool, st callstack.ID) ([]byte, error)
	checkFree  func(a uintptr, st callstack.ID)
	checkLive  func(a uintptr) bool

	// guardTicks counts the allocations that no magazine counts toward
	// the guard pages' next sample (guardTick).
	guardTicks atomic.Uint64

	// prof is the allocation profile, nil if the heap does
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

// The errors an allocation fails with, returned by the Try forms and
// panicked by the others, wrapped with the figures: test them with errors.Is.
var (
	// ErrLimit: the allocation would take the heap past Options.Limit.
	ErrLimit = pageheap.ErrLimit

	// ErrClosed: the heap is closed.
	ErrClosed = pageheap.ErrClosed

	// ErrSize: a negative size, or one no heap can hold.
	ErrSize = errors.New("offheap: invalid allocation size")

	// ErrAddressSpace: the heap's address space (at most 16 TiB) cannot
	// grow to hold the allocation. No Limit was reached: freeing memory
	// makes room.
	ErrAddressSpace = pageheap.ErrAddressSpace
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
	if !h.checked() {
		h.startProfile(opts.ProfileBytes) // sampling.go
	}
	if err := h.pages.Reserve(opts.Limit, first, h.hasChecker(), opts.ReleaseDelay, opts.HugePages, classPages[:]); err != nil {
		osmem.Unmap(h.busy, maxProcs*busyStride)
		return nil, err
	}
	h.base, h.size, h.fastSize, h.pmap = h.pages.Base, h.pages.Size, h.pages.Size, h.pages.Pmap
	if h.hasChecker() {
		h.initChecked()
	}
	return h, nil
}

// checked reports whether h is in checked mode (Options.Checked or
// GuardPages, or the offheapchecked build tag, which newHeap folds into
// Checked): the checker takes every allocation and every Free.
func (h *Heap) checked() bool { return h.opts.Checked }

// hasChecker reports whether h has a checker: in checked mode, or in a
// sampled heap (Options.GuardOneIn without Checked), whose checker takes
// the guard pages' samples and their Frees. Such a heap keeps records of
// the blocks its checker has, for Lookup, Leaks and MemoryErrors.
func (h *Heap) hasChecker() bool { return h.opts.Checked || h.opts.GuardOneIn > 0 }

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

// The process-wide heap: its options until it is made, then the heap.
var defaultHeap struct {
	mu   sync.Mutex
	opts Options
	h    atomic.Pointer[Heap]
}

// Default returns the process-wide heap, created on first use with the
// Options of SetDefaultOptions (checked under the offheapchecked build tag).
// It panics if the system has no off-heap memory backend.
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

// SetDefaultOptions sets the Options Default creates the process-wide heap
// with. Call it before anything uses Default: afterwards it returns an error
// (nil if opts are the heap's). It returns NewHeap's error for options
// NewHeap refuses.
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
// magazine goes back to the central lists, empty spans to the page heap, and
// free pages to the system. It stops the world briefly to take the other Ps'
// magazines, as runtime.ReadMemStats does. The blocks a Local holds stay
// with it (Local.Flush gives them back).
func (h *Heap) Trim() {
	if !h.enter() {
		return
	}
	defer h.exit()
	if c := h.chk; c != nil {
		c.flush(true) // checked mode: the quarantine's blocks go back first
	}
	h.drainAllMagazines()
	for c := 1; c < numClasses; c++ {
		h.central[c].trim(h)
	}
	if p := h.prof; p != nil {
		p.dropStash(&h.pages) // profile.go
	}
	h.pages.Trim()
}
