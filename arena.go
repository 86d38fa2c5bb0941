package offheap

// An Arena is a bump allocator for request- and batch-scoped memory: many
// goroutines allocate from it at once, and one call (Reset or Release) frees
// everything it handed out. This comment is the design; read it before the
// code.
//
// # The layers
//
//  1. Per-P sub-chunks (the fast path). Each P (runtime.GOMAXPROCS) owns a
//     sub-chunk [next, end) of at most arenaSub bytes. Alloc pins the
//     goroutine to its P (internal/pin), checks that the rounded request fits,
//     advances next, unpins. No lock, no atomic, no shared cache line: the
//     per-P states are padded to arenaLine bytes (two cache lines, because
//     the adjacent-line prefetcher pairs lines) and live off-heap, in one
//     heap block, like the heap's magazines. Pinning is the
//     synchronization, which the race detector cannot see: in race builds,
//     where the heap's memory is Go memory it does see (race.go), the
//     functions that touch a P's state pinned (Alloc, allocFast, allocSub)
//     are go:norace, and the accesses they make, their clearing of claims
//     included, are the allocator's own, hidden from it.
//  2. Lanes of shared chunks (one atomic per refill). A P whose sub-chunk is
//     too short claims the next arenaSub bytes of its lane's current chunk
//     with one atomic add on the chunk's offset, clears them, and installs
//     them as its sub-chunk. Requests above arenaFastMax, and goroutines on
//     Ps beyond the per-P array (GOMAXPROCS raised after the array was
//     sized), claim exactly their rounded size from the chunk the same way.
//     P p uses lane p mod the number of lanes (GOMAXPROCS at NewArena, at
//     most arenaMaxLanes), so with one lane per P a chunk is filled by one
//     P, and after Reset each lane takes back the chunks it used the round
//     before: a P refills with memory its own core's cache last held. With
//     one chunk shared by every P, the Ps got each other's memory after
//     every Reset, and two workers filling 830 KiB rounds took longer than
//     one (bench shape arena), their caches passing lines back and forth.
//  3. Chunks (a lock, taken only at chunk exhaustion). A claim that finds its
//     lane's chunk exhausted takes Arena.mu, and unless another goroutine
//     has already replaced the chunk, installs a new one: a spare chunk the
//     lane used before the last Reset (in the order it used them), else
//     another lane's spare, else a fresh one from the heap. A request of at
//     least bigMin bytes gets a chunk of its own, under the same lock: the
//     smallest spare of its kind that fits, or a fresh one. Keeping the two
//     kinds apart, and the order, means a round that repeats the last one's
//     work takes no new chunk.
//
// # Invariants
//
//   - Every chunk offset in [0, size) is claimed by exactly one atomic add:
//     off only grows between Resets, so the intervals [old, old+want) that
//     the adds return are disjoint, and the part of each below size belongs
//     to its claimer alone. A claim may run past size; off is then past the
//     end for good and every later claim on that chunk fails.
//   - Every byte of a chunk below min(off, size) is exactly one of: handed
//     out (in 16-byte units), free in some P's sub-chunk, or waste (a chunk
//     tail too short for the claim that found it, a sub-chunk remainder
//     dropped at refill, the rounding of a chunk of its own). Stats derives
//     the bytes handed out from this, so the fast path counts nothing.
//   - Every offset and size is a multiple of 16 and every chunk starts
//     16-byte aligned, so every allocation is 16-byte aligned with no
//     alignment overshoot to give back (Zig's ArenaAllocator needs a CAS for
//     that; a fixed alignment does not).
//   - Zeroing: a claim is cleared right after it is made, by its claimer,
//     before any of it is handed out (arenaZeroOnClaim); a chunk of its own
//     comes zeroed from the heap (which clears only its dirty pages) or is
//     cleared when reused. So chunks are taken from the heap unzeroed, Reset
//     is O(chunks), and the clearing happens in 4 KiB runs on memory about to
//     be used (it leaves it in cache). The measured alternatives, zeroing in
//     Alloc and zeroing at Reset, are test-only arms of a.zero, compared by
//     BenchmarkArenaZero.
//
// # Why lock-free is correct here
//
// A P's sub-chunk is touched only by the goroutine pinned to that P, and
// pinning excludes every other goroutine from the P until Unpin; a goroutine
// that moves to another P afterwards keeps only its own allocation. A refill
// claims unpinned (clearing 4 KiB must not hold the P), then pins again,
// possibly on another P, and keeps whichever of the P's remainder and its
// claim's remainder is longer; the other becomes waste. Two goroutines that
// both refill the same P therefore never lose memory that was handed out,
// only a remainder.
//
// # Chunk exhaustion races
//
// When the current chunk runs out, every goroutine that claims from it gets
// an offset past the end (the one whose claim straddled the end counts the
// short tail as waste, or uses it if its request fits). Each then calls
// a.growFrom(lane, c) with the chunk it saw. growFrom takes mu; the first
// one installs a new chunk, and the others find the lane's current chunk
// is no longer c and retry on the new one
// without allocating. So exactly one chunk is taken per exhaustion, and
// there is no chunk that lost a race to give back (Zig keeps a private
// free list for those; a lock taken once per chunk costs nothing measurable).
// A failed heap allocation leaves the exhausted chunk current: every
// claimer gets the error (TryAlloc returns it, Alloc panics with it) and
// nothing already handed out is touched.
//
// # Reset, Release and checked mode
//
// Reset and Release must not run concurrently with Alloc (nor with each
// other); the caller's synchronization (a WaitGroup, a channel) orders them.
// Reset empties every P's sub-chunk and keeps the chunks as spares; Release
// gives every chunk and the per-P array back to the heap and clears
// a.procs, so a later Alloc misses the fast path and panics in the slow one.
// On a checked heap (Options.Checked), Reset gives every chunk back to the
// heap too instead of keeping it: the checked heap poisons and quarantines
// what it gets back (checker.quarantineArena), so a use of arena memory
// after Reset is caught, where a private pool of chunks would blind the
// detector.
//
// # The arena's memory in the heap
//
// Chunks and the per-P array are page runs of the heap (allocRun) whose
// pagemap words carry classArena, whatever their size. So Heap.Free tells
// arena memory from a block at any address in it: the fast path takes only
// small-class pages, and the slow path refuses classArena pages by name,
// in fast and checked mode alike. Were chunks ordinary blocks, Free of an
// arena's first allocation (a chunk's start) would free the chunk under
// the live arena and the heap would hand it out again.
//
// # The heap's Close
//
// Close takes an arena's per-P array out of service (Heap.arenasOutOfService,
// under mu, which installProcs takes to install one) before it quiesces:
// the fast path is nosplit from its load of a.procs to its unpin, so it
// cannot use an array Close has unmapped; the slow paths load a.procs
// pinned, and run between h.enter and h.exit (closing.go).
// Every method on an arena of a closed heap then fails with an error that
// wraps ErrClosed, except a second Release and Stats after Release.

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/offheap/offheap/internal/pin"
)

const (
	arenaAlign = 16 // every allocation's alignment and size granule

	// arenaLine is the stride of the per-P states: two 64-byte lines, since
	// the adjacent-line prefetcher fetches lines in pairs.
	arenaLine = 128

	// arenaSub is how many bytes a P claims from its lane's chunk per refill:
	// one atomic add per arenaSub bytes, and at most arenaSub bytes parked
	// per P.
	arenaSub = 16 << 10

	// arenaFastMax is the largest rounded request served from the per-P
	// sub-chunks. Above it a request claims its own bytes from the shared
	// chunk: refilling a sub-chunk for it would drop up to arenaFastMax-16
	// bytes of remainder, and past 1/32 of arenaSub that waste is too much.
	arenaFastMax = arenaSub / 32

	// classArena marks the pagemap words of an arena's page runs.
	classArena = 0xfd

	arenaChunkDefault = 64 << 10     // NewArena's first chunk
	arenaMaxLanes     = 16           // most lanes of chunks (one per P up to that)
	arenaChunkMin     = 4 * arenaSub // at least 4 sub-chunks per chunk
	arenaChunkMax     = 1 << 20      // NewArena's chunks stop doubling here
)

// Arena is a bump allocator on a Heap: Alloc hands out zeroed, 16-byte
// aligned memory from chunks taken from the heap, and Reset or Release frees
// all of it at once. Alloc and TryAlloc are safe for concurrent use and take
// no lock on the fast path. Reset and Release must not run concurrently with
// any other method; Stats may, and then gives a rough snapshot. *Arena
// satisfies Allocator, so New and MakeSlice work on it.
//
// Memory from an Arena must not be passed to Heap.Free (which panics,
// naming the arena), must not hold Go pointers (see the package rules), and
// must not be used after Reset, Release, or the heap's Close. After the
// heap's Close every method fails with ErrClosed (returned, or panicked in
// an error that wraps it), except a second Release.
type Arena struct {
	// The one word of the Arena that the fast path reads, on cache lines of
	// its own: nil until the first refill, and again after Release or the
	// heap's Close.
	_     [arenaLine]byte
	procs atomic.Pointer[arenaProcs]
	_     [arenaLine - 8]byte

	// Fixed at creation.
	h      *Heap
	src    chunkSource // nil: the heap; tests substitute one that fails
	chunk  uintptr     // bytes of a general chunk (the first one, if growing)
	grow   bool        // general chunks double up to arenaChunkMax (NewArena)
	bigMin uintptr     // rounded requests of this many bytes get a chunk of their own
	zero   arenaZero   // who clears memory; tests and benchmarks change it

	lanes    []arenaLane // fixed at creation; each lane's chunk is nil until its first claim
	released atomic.Bool

	mu       sync.Mutex      // guards what follows; taken at chunk exhaustion, Reset, Release, Stats
	chunks   []*arenaChunk   // chunks in use since the last Reset
	spareGen [][]*arenaChunk // by lane: general chunks kept by Reset, to reuse in the order they were used
	spareOwn []*arenaChunk   // chunks of their own kept by Reset, largest first
	held     uintptr         // bytes of chunks and spares
	procMem  []byte          // the heap block that holds procs
	peak     uint64          // the largest AllocBytes of the rounds before this one
}

// arenaProcs is the off-heap per-P array: a header line, then one state per P
// with an id below n.
type arenaProcs struct {
	n uintptr // Ps with a state; the others claim from their lane's chunk
	_ [arenaLine - 8]byte
	p [maxProcs]arenaP // only the first n exist; the type bounds indexing
}

// arenaP is one P's sub-chunk: [next, end) is claimed, cleared and not yet
// handed out. Both are 0 when the P has none.
type arenaP struct {
	next, end uintptr
	waste     uintptr // remainders this P dropped at refill: counted here, not on the chunk's contended line
	_         [arenaLine - 24]byte
}

// arenaLane is a lane's current chunk, on cache lines of its own.
type arenaLane struct {
	cur atomic.Pointer[arenaChunk]
	_   [arenaLine - 8]byte
}

// arenaChunk is one block of heap memory that an arena bumps through. It lives
// on the Go heap (it holds no Go pointers into the arena's memory, only
// addresses); off is alone on its cache line, the one claims contend on.
type arenaChunk struct {
	off   atomic.Uintptr // bytes claimed; may run past size, which means exhausted
	waste atomic.Uintptr // bytes below min(off, size) that nobody will hand out
	_     [arenaLine - 16]byte
	base  uintptr // address of the block
	size  uintptr // its length, a multiple of 16
	own   bool    // a chunk of its own for one request; reused only for such
	lane  int     // general chunks: the lane that last used it
}

// chunkSource is where an arena gets its memory: the heap, or in tests a
// source that fails at chosen calls.
type chunkSource interface {
	alloc(n int, zero bool) ([]byte, error)
	free(b []byte)
}

// arenaZero says who clears arena memory.
type arenaZero uint8

const (
	// arenaZeroOnClaim: each claim is cleared by its claimer; chunks come
	// from the heap unzeroed. The default, and the cheapest (see
	// BenchmarkArenaZero).
	arenaZeroOnClaim arenaZero = iota
	// arenaZeroOnReset: chunks come zeroed from the heap and Reset clears
	// the bytes that were claimed. Measurement arm only.
	arenaZeroOnReset
	// arenaZeroNone: nothing is cleared; the benchmark clears each
	// allocation, which is what zeroing in Alloc costs. Measurement arm
	// only: Alloc's contract does not hold.
	arenaZeroNone
)

// ArenaStats is an arena's census. It is exact when no Alloc is running.
type ArenaStats struct {
	// AllocBytes is the bytes handed out since NewArena or the last Reset,
	// each allocation counted rounded up to a multiple of 16.
	AllocBytes uint64
	// WasteBytes is the bytes of chunks lost until the next Reset: chunk
	// tails too short for the request that found them, sub-chunk remainders
	// dropped at refill, and the rounding of chunks of their own.
	WasteBytes uint64
	// HeldBytes is the bytes of every chunk the arena holds from the heap,
	// in use or kept by Reset for reuse: what it costs the heap.
	HeldBytes uint64
	// PeakAllocBytes is the most bytes the arena has had handed out at once
	// since NewArena, across Resets, and still after Release: the largest
	// AllocBytes of any round. AllocBytes only grows until Reset, so each
	// round's peak is what Reset finds; the fast path counts nothing for it.
	PeakAllocBytes uint64
	// Chunks is how many chunks the arena holds.
	Chunks int
}

// arenaReleasedError reports a use of an Arena after Release. It wraps
// ErrClosed.
type arenaReleasedError struct{ op string }

func (e arenaReleasedError) Error() string {
	return "offheap: Arena." + e.op + " after Release"
}

func (arenaReleasedError) Unwrap() error { return ErrClosed }

// arenaClosedError reports a use of an Arena after its heap's Close.
func arenaClosedError(op string) error { return closedError("Arena." + op) }

// NewArena returns an empty arena on h. It takes no memory until the first
// Alloc. Its first chunk is 64 KiB, and each later one is as large as all the
// chunks it holds, up to 1 MiB, so an arena holds at most about twice what
// it hands out (plus requests of their own chunk, and one partly used chunk
// per P that allocates from it, since each P fills chunks of its own). Requests of 16 KiB or more
// get a chunk of their own.
func (h *Heap) NewArena() *Arena {
	return newArena(h, arenaChunkDefault, true, nil)
}

// NewArenaSize returns an empty arena on h whose chunks are all chunkSize
// bytes, rounded up to a multiple of 8 KiB and at least 64 KiB; requests of a
// quarter of that or more get a chunk of their own. Use it when NewArena's
// growth does not fit: small chunks for many small arenas, large ones to take
// the chunk lock less often. It panics if chunkSize is not positive.
func (h *Heap) NewArenaSize(chunkSize int) *Arena {
	if chunkSize <= 0 || uint64(chunkSize) > maxAlloc {
		panic(fmt.Sprintf("offheap: NewArenaSize: invalid chunk size %d", chunkSize))
	}
	return newArena(h, alignUp(max(uintptr(chunkSize), arenaChunkMin), pageSize), false, nil)
}

func newArena(h *Heap, chunk uintptr, grow bool, src chunkSource) *Arena {
	n := min(runtime.GOMAXPROCS(0), arenaMaxLanes)
	return &Arena{h: h, src: src, chunk: chunk, grow: grow, bigMin: chunk / 4,
		lanes: make([]arenaLane, n), spareGen: make([][]*arenaChunk, n)}
}

// lane is the lane of the calling goroutine's P.
func (a *Arena) lane() int {
	pid := pin.Pin()
	pin.Unpin()
	return pid % len(a.lanes)
}

// Alloc returns n zeroed bytes with len and cap n, 16-byte aligned. It is safe
// for concurrent use. It panics with an error whose message starts
// "offheap:" if n is negative, the heap cannot supply a chunk, or the arena
// was released; TryAlloc returns that error instead. Alloc(0) returns an
// empty, non-nil slice.
//
//go:nosplit
//go:norace
func (a *Arena) Alloc(n int) []byte {
	// allocFast, written out: with the two calls to pin it cannot inline,
	// and a second call level costs a measurable nanosecond.
	if ps := a.procs.Load(); ps != nil && n > 0 {
		sz := uintptr(n+arenaAlign-1) &^ (arenaAlign - 1)
		pid := pin.Pin()
		if uint(pid) < uint(ps.n) {
			p := &ps.p[uint(pid)%maxProcs] // pid < n <= maxProcs: the modulo only drops the bounds check
			if x := p.next; p.end-x >= sz {
				p.next = x + sz
				pin.Unpin()
				return bytesAt(x, n)
			}
		}
		pin.Unpin()
	}
	return a.allocSlow(n)
}

// TryAlloc is Alloc returning an error instead of panicking: errors.Is(err,
// ErrLimit) or ErrClosed when the heap cannot supply a chunk, ErrSize for a
// negative or impossible n, ErrClosed after Release. What the arena handed
// out before stays valid.
func (a *Arena) TryAlloc(n int) ([]byte, error) {
	if x := a.allocFast(n); x != 0 {
		return bytesAt(x, n), nil
	}
	return a.alloc(n)
}

// allocFast bumps the current P's sub-chunk, or returns 0. This is the whole
// fast path: one atomic load that is a plain load, the pin, a compare, a
// store, the unpin. It and Alloc are nosplit: no safe point from the load
// of procs to the unpin, so that Close, which takes procs out of service and
// then quiesces, cannot unmap the array under them (closing.go, way 1).
//
//go:nosplit
//go:norace
func (a *Arena) allocFast(n int) uintptr {
	if ps := a.procs.Load(); ps != nil && n > 0 {
		sz := uintptr(n+arenaAlign-1) &^ (arenaAlign - 1) // huge n wraps to a huge sz
		pid := pin.Pin()
		if uint(pid) < uint(ps.n) {
			p := &ps.p[uint(pid)%maxProcs] // pid < n <= maxProcs: the modulo only drops the bounds check
			if x := p.next; p.end-x >= sz {
				p.next = x + sz
				pin.Unpin()
				return x
			}
		}
		pin.Unpin()
	}
	return 0
}

// allocSlow is Alloc's slow path, out of line to keep Alloc's frame small.
func (a *Arena) allocSlow(n int) []byte {
	b, err := a.alloc(n)
	if err != nil {
		panic(err)
	}
	return b
}

// alloc serves every request the fast path did not, between the heap's
// enter and exit (closing.go).
func (a *Arena) alloc(n int) ([]byte, error) {
	if a.released.Load() {
		return nil, arenaReleasedError{"Alloc"}
	}
	if !a.h.enter() {
		return nil, arenaClosedError("Alloc")
	}
	defer a.h.exit()
	switch {
	case n < 0:
		return nil, fmt.Errorf("%w: negative size %d", ErrSize, n)
	case n == 0:
		return []byte{}, nil
	case uint64(n) > maxAlloc:
		return nil, fmt.Errorf("%w: %d bytes is more than an arena can hold", ErrSize, n)
	}
	sz := alignUp(uintptr(n), arenaAlign)
	var x uintptr
	var err error
	switch {
	case sz >= a.bigMin:
		x, err = a.allocOwn(sz, n)
	case sz <= arenaFastMax:
		x, err = a.allocSub(sz)
	default:
		x, err = a.allocShared(sz, n)
	}
	if err != nil {
		return nil, err
	}
	return bytesAt(x, n), nil
}

// allocSub serves a small request by refilling the current P's sub-chunk.
//
//go:norace
func (a *Arena) allocSub(sz uintptr) (uintptr, error) {
	if a.procs.Load() == nil && a.installProcs() == nil {
		return a.allocShared(sz, int(sz))
	}
	pid := pin.Pin()
	ps := a.procs.Load() // pinned: Close may take it out of service (closing.go)
	if ps == nil || uint(pid) >= uint(ps.n) {
		pin.Unpin()
		return a.allocShared(sz, int(sz))
	}
	// Another goroutine on this P may have refilled it since the fast path
	// looked, or the fast path ran before procs existed.
	if p := &ps.p[pid]; p.end-p.next >= sz {
		x := p.next
		p.next = x + sz
		pin.Unpin()
		return x, nil
	}
	pin.Unpin()

	lo, hi, c, err := a.claim(pid%len(a.lanes), arenaSub, sz)
	if err != nil {
		return 0, err
	}
	if a.zero == arenaZeroOnClaim {
		clear(bytesAt(lo, int(hi-lo)))
	}
	x := lo
	lo += sz
	drop := hi - lo
	pid = pin.Pin() // perhaps another P: install there
	if ps := a.procs.Load(); ps != nil && uint(pid) < uint(ps.n) {
		p := &ps.p[pid]
		if hi-lo > p.end-p.next {
			drop = p.end - p.next
			p.next, p.end = lo, hi
		}
		// An atomic add on the chunk's waste would write the line every
		// refill contends on; the P's own word costs nothing.
		p.waste += drop
		drop = 0
	}
	pin.Unpin()
	if drop != 0 {
		c.waste.Add(drop)
	}
	return x, nil
}

// allocShared claims exactly sz bytes from the calling P's lane for a request of
// n bytes.
func (a *Arena) allocShared(sz uintptr, n int) (uintptr, error) {
	lo, _, _, err := a.claim(a.lane(), sz, sz)
	if err != nil {
		return 0, err
	}
	if a.zero == arenaZeroOnClaim {
		clear(bytesAt(lo, n))
	}
	return lo, nil
}

// claim takes want bytes from lane's chunk with one atomic add, or fewer
// (at least need) when the claim straddles the chunk's end. It returns the
// claimed range and its chunk; the caller owns it alone.
func (a *Arena) claim(lane int, want, need uintptr) (lo, hi uintptr, c *arenaChunk, err error) {
	for {
		c = a.lanes[lane].cur.Load()
		if c != nil {
			o := c.off.Add(want) - want
			if o < c.size {
				end := min(o+want, c.size)
				if end-o >= need {
					return c.base + o, c.base + end, c, nil
				}
				c.waste.Add(end - o) // a tail too short for this request
			}
		}
		if err := a.growFrom(lane, c); err != nil {
			return 0, 0, nil, err
		}
	}
}

// growFrom replaces the exhausted current chunk old with a new one, unless
// another goroutine already has.
func (a *Arena) growFrom(lane int, old *arenaChunk) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released.Load() {
		return arenaReleasedError{"Alloc"}
	}
	l := &a.lanes[lane]
	if l.cur.Load() != old {
		return nil
	}
	var c *arenaChunk
	// The lane's own spares first, in the order of the last round, so that
	// the same work takes the same chunks again; then any lane's.
	for i := range a.spareGen {
		k := (lane + i) % len(a.spareGen)
		if s := a.spareGen[k]; len(s) > 0 {
			c = s[0]
			a.spareGen[k] = s[1:]
			break
		}
	}
	if c == nil {
		size := a.chunk
		if a.grow {
			size = min(max(size, alignUp(a.held, pageSize)), max(size, arenaChunkMax))
		}
		var err error
		if c, err = a.newChunk(size, a.zero == arenaZeroOnReset); err != nil {
			return err
		}
	}
	c.lane = lane
	a.chunks = append(a.chunks, c)
	l.cur.Store(c)
	return nil
}

// allocOwn serves a request of at least bigMin bytes with a chunk of its
// own: the smallest spare that fits, or a new chunk from the heap.
func (a *Arena) allocOwn(sz uintptr, n int) (uintptr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released.Load() {
		return 0, arenaReleasedError{"Alloc"}
	}
	var c *arenaChunk
	// spareOwn is sorted largest first: the chunks of at least sz bytes are
	// a prefix, and the last of them is the smallest that fits. General
	// spares are left to general refills, so a repeated round takes no new
	// chunk.
	if k, _ := slices.BinarySearchFunc(a.spareOwn, sz, fitsFirst); k > 0 {
		c = a.spareOwn[k-1]
		a.spareOwn = slices.Delete(a.spareOwn, k-1, k)
		if a.zero == arenaZeroOnClaim {
			clear(bytesAt(c.base, n))
		}
	} else {
		var err error
		// Zeroed by the heap, which clears only the pages that were dirty.
		if c, err = a.newChunk(alignUp(sz, pageSize), a.zero != arenaZeroNone); err != nil {
			return 0, err
		}
	}
	c.own = true
	c.off.Store(c.size)
	c.waste.Store(c.size - sz)
	a.chunks = append(a.chunks, c)
	return c.base, nil
}

// fitsFirst orders a chunk that holds sz bytes before one that does not.
func fitsFirst(c *arenaChunk, sz uintptr) int {
	if c.size >= sz {
		return -1
	}
	return 1
}

// newChunk takes a chunk of size bytes from the source. Called with mu held.
func (a *Arena) newChunk(size uintptr, zero bool) (*arenaChunk, error) {
	b, err := a.mem(int(size), zero)
	if err != nil {
		return nil, err
	}
	a.held += size
	return &arenaChunk{base: addrOf(b), size: size}, nil
}

// chunkBytes is the size of the block the heap would hand out for a request
// of sz bytes (Buffer sizes its blocks so). An arena's chunk of its own is a
// page run whatever its size (see The arena's memory in the heap):
// alignUp(sz, pageSize).
func chunkBytes(sz uintptr) uintptr {
	if sz <= maxSmall {
		return uintptr(classSize[sizeClass(int(sz))])
	}
	return alignUp(sz, pageSize)
}

// installProcs gives the arena its per-P array, sized for GOMAXPROCS now, or
// returns nil if the heap has no room (the arena then claims from its lanes
// alone, and tries again on the next refill).
func (a *Arena) installProcs() *arenaProcs {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ps := a.procs.Load(); ps != nil || a.released.Load() || a.h.closed.Load() {
		return ps // on a closed heap nothing is installed: Close took it out of service under mu
	}
	np := min(runtime.GOMAXPROCS(0), maxProcs)
	b, err := a.mem((np+2)*arenaLine, true) // the header, the states, and room to align
	if err != nil {
		return nil
	}
	ps := (*arenaProcs)(ptr(alignUp(addrOf(b), arenaLine)))
	ps.n = uintptr(np)
	a.procMem = b
	a.h.registerArena(a)
	a.procs.Store(ps)
	return ps
}

// registerArena and forgetArena keep the set of arenas with a per-P array,
// for arenasOutOfService. The set holds them weakly: an arena the program
// dropped without Release cannot be called again.
func (h *Heap) registerArena(a *Arena) {
	h.arenaMu.Lock()
	if h.arenas == nil {
		h.arenas = make(map[weak.Pointer[Arena]]struct{})
	}
	h.arenas[weak.Make(a)] = struct{}{}
	h.arenaMu.Unlock()
}

func (h *Heap) forgetArena(a *Arena) {
	h.arenaMu.Lock()
	delete(h.arenas, weak.Make(a))
	h.arenaMu.Unlock()
}

// arenasOutOfService takes every arena's per-P array out of service, for
// Close (see the arena's design comment, The heap's Close). Called after
// the heap is marked closed, so that installProcs installs no other.
func (h *Heap) arenasOutOfService() {
	h.arenaMu.Lock()
	var as []*Arena
	for w := range h.arenas {
		if a := w.Value(); a != nil {
			as = append(as, a)
		}
	}
	h.arenas = nil
	h.arenaMu.Unlock()
	for _, a := range as {
		a.mu.Lock()
		a.procs.Store(nil)
		a.mu.Unlock()
	}
}

// mem and free reach the chunk source: the heap's page runs marked
// classArena, or a test's source.
func (a *Arena) mem(n int, zero bool) ([]byte, error) {
	if a.src != nil {
		return a.src.alloc(n, zero)
	}
	return a.h.arenaRun(n, zero)
}

func (a *Arena) free(b []byte) {
	if a.src != nil {
		a.src.free(b)
		return
	}
	a.h.freeArenaRun(addrOf(b), len(b))
}

// arenaRun takes a run of pages for n bytes of an arena, marked classArena.
// Called between enter and exit.
func (h *Heap) arenaRun(n int, zero bool) ([]byte, error) {
	p, err := h.allocRun(n, zero, classArena)
	if c := h.chk; err != nil && c != nil && errors.Is(err, ErrLimit) && c.flush(false) {
		// The quarantine held the memory the limit refuses, as in
		// checker.alloc: it gave it back, so try once more.
		p, err = h.allocRun(n, zero, classArena)
	}
	if err != nil {
		return nil, err
	}
	return bytesAt(p, n), nil
}

// freeArenaRun gives back an arena's run of n bytes at p: to the page heap,
// or on a checked heap to its quarantine, which poisons it and gives it
// back when it leaves. Called between enter and exit.
func (h *Heap) freeArenaRun(p uintptr, n int) {
	if c := h.chk; c != nil && c.all {
		c.quarantineArena(p, n)
		return
	}
	h.freeRun(p, classArena)
}

// Reset forgets every allocation: the memory the arena handed out must not be
// used again, and the next Alloc reuses it. The arena keeps its chunks for
// reuse, except on a checked heap, where it gives them back so that the
// heap's poisoning catches a use after Reset. Reset must not run concurrently
// with any other method. It panics after Release, and after the heap's Close
// (with an error that wraps ErrClosed).
func (a *Arena) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released.Load() {
		panic(arenaReleasedError{"Reset"})
	}
	if !a.h.enter() {
		panic(arenaClosedError("Reset"))
	}
	defer a.h.exit()
	a.endRound()
	a.dropSubChunks()
	if a.h.chk != nil {
		// Checked mode: no pool that would blind the detector.
		a.freeChunks()
		return
	}
	for _, c := range a.chunks {
		if a.zero == arenaZeroOnReset {
			clear(bytesAt(c.base, int(min(c.off.Load(), c.size))))
		}
		c.off.Store(0)
		c.waste.Store(0)
	}
	used := make([][]*arenaChunk, len(a.lanes))
	for _, c := range a.chunks {
		if c.own {
			a.spareOwn = append(a.spareOwn, c)
		} else {
			used[c.lane] = append(used[c.lane], c)
		}
	}
	for i, u := range used {
		a.spareGen[i] = append(u, a.spareGen[i]...) // the ones this round used come first
	}
	clear(a.chunks)
	a.chunks = a.chunks[:0]
	slices.SortStableFunc(a.spareOwn, func(x, y *arenaChunk) int {
		return cmp.Compare(y.size, x.size) // largest first
	})
}

// Release gives every chunk back to the heap. The memory the arena handed out
// must not be used again, and a later Alloc, TryAlloc or Reset panics (or
// returns an error wrapping ErrClosed). Release must not run concurrently
// with any other method; a second Release does nothing. After the heap's
// Close, which took the arena's memory with the rest, Release panics with
// an error that wraps ErrClosed: release arenas before closing their heap.
func (a *Arena) Release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released.Swap(true) {
		return
	}
	a.h.forgetArena(a)
	if !a.h.enter() {
		a.procs.Store(nil)
		a.chunks, a.spareGen, a.spareOwn, a.procMem, a.held = nil, nil, nil, nil, 0
		panic(arenaClosedError("Release"))
	}
	defer a.h.exit()
	a.endRound()
	a.dropSubChunks()
	a.procs.Store(nil) // the fast path now always misses
	a.freeChunks()
	if a.procMem != nil {
		a.free(a.procMem)
		a.procMem = nil
	}
}

// endRound folds the round's AllocBytes into the peak, before Reset or
// Release forgets the round. Called with mu held and no Alloc running.
func (a *Arena) endRound() {
	alloc, _ := a.allocBytes()
	a.peak = max(a.peak, alloc)
}

// dropSubChunks empties every P's sub-chunk and the current chunk. Called
// with mu held and no Alloc running.
func (a *Arena) dropSubChunks() {
	for i := range a.lanes {
		a.lanes[i].cur.Store(nil)
	}
	if ps := a.procs.Load(); ps != nil {
		for i := range ps.n {
			ps.p[i].next, ps.p[i].end, ps.p[i].waste = 0, 0, 0
		}
	}
}

// freeChunks gives every chunk back to the source. Called with mu held.
func (a *Arena) freeChunks() {
	for _, c := range a.chunks {
		a.free(bytesAt(c.base, int(c.size)))
	}
	for i, s := range a.spareGen {
		for _, c := range s {
			a.free(bytesAt(c.base, int(c.size)))
		}
		a.spareGen[i] = nil
	}
	for _, c := range a.spareOwn {
		a.free(bytesAt(c.base, int(c.size)))
	}
	a.chunks, a.spareOwn, a.held = nil, nil, 0
}

// Stats returns the arena's census. It is exact when no Alloc is running, and
// a rough snapshot otherwise. After Release it is zero; after the heap's
// Close (without Release) it panics with an error that wraps ErrClosed.
func (a *Arena) Stats() ArenaStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.released.Load() {
		if !a.h.enter() {
			panic(arenaClosedError("Stats"))
		}
		defer a.h.exit()
	}
	var s ArenaStats
	s.AllocBytes, s.WasteBytes = a.allocBytes()
	s.PeakAllocBytes = max(a.peak, s.AllocBytes)
	s.HeldBytes = uint64(a.held)
	s.Chunks = len(a.chunks) + len(a.spareOwn)
	for _, g := range a.spareGen {
		s.Chunks += len(g)
	}
	return s
}

// allocBytes derives the bytes handed out and wasted since the last Reset
// from the chunks' offsets and the per-P sub-chunks (see the invariants).
// Called with mu held.
func (a *Arena) allocBytes() (alloc, waste uint64) {
	var claimed uint64
	for _, c := range a.chunks {
		claimed += uint64(min(c.off.Load(), c.size))
		waste += uint64(c.waste.Load())
	}
	var parked uint64 // claimed, cleared, not handed out
	if ps := a.procs.Load(); ps != nil {
		for i := range ps.n {
			p := &ps.p[i]
			// The owner P writes these with plain stores; aligned word loads
			// never tear, but next and end may come from different moments.
			next, end := atomic.LoadUintptr(&p.next), atomic.LoadUintptr(&p.end)
			if end > next {
				parked += uint64(end - next)
			}
			waste += uint64(atomic.LoadUintptr(&p.waste))
		}
	}
	if used := waste + parked; claimed > used {
		alloc = claimed - used
	}
	return alloc, waste
}

// alignUp rounds x up to a multiple of the power of two align.
func alignUp(x, align uintptr) uintptr {
	return (x + align - 1) &^ (align - 1)
}
