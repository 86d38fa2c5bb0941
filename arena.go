package offheap

// An Arena is a bump allocator for request- and batch-scoped memory: many
// goroutines allocate from it at once, and one call (Reset or Release) frees
// everything it handed out. This comment is the design; read it before the
// code, which is here (types, census), in arena_alloc.go (the allocation
// paths) and in arena_heap.go (the arena's memory in its heap: Reset,
// Release, checked mode, the heap's Close).
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
//     where the heap's memory is Go memory it does see, the
//     functions that touch a P's state pinned (Alloc, bump, allocSub) are
//     exempt from it (a norace directive), and the accesses they make,
//     their clearing of claims included, are the allocator's own, hidden
//     from it.
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
//     one chunk shared by every P, the Ps would get each other's memory
//     after every Reset, and their caches would pass lines back and forth
//     (the arena shape of offheap bench; docs/DESIGN.md).
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
//     before any of it is handed out; a chunk of its own comes zeroed from
//     the heap (which clears only its dirty pages) or is cleared when
//     reused. So chunks are taken from the heap unzeroed, Reset is
//     O(chunks), and the clearing happens in 4 KiB runs on memory about to
//     be used (it leaves it in cache). Zeroing each allocation in Alloc
//     costs more, and zeroing the used bytes at Reset no less
//     (docs/DESIGN.md).
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

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pageheap"
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

	arenaChunkDefault = 64 << 10     // NewArena's first chunk
	arenaMaxLanes     = 16           // most lanes of chunks (one per P up to that)
	arenaChunkMin     = 4 * arenaSub // at least 4 sub-chunks per chunk
	arenaChunkMax     = 1 << 20      // NewArena's chunks stop doubling here
)

// Arena is a bump allocator on a Heap: Alloc hands out zeroed, 16-byte
// aligned memory from chunks of the heap, and Reset or Release frees all of
// it at once. Alloc and TryAlloc are safe for concurrent use; Reset and
// Release must not run concurrently with any other method. *Arena is an
// Allocator. Arena memory must not go to Heap.Free, hold Go pointers, or be
// used after Reset, Release or the heap's Close. The zero Arena has no heap:
// its Alloc panics (TryAlloc returns the error); make arenas with
// Heap.NewArena.
type Arena struct {
	// The one word of the Arena that the fast path reads, on cache lines of
	// its own: nil until the first refill, and again after Release or the
	// heap's Close.
	_     [arenaLine]byte
	procs atomic.Pointer[arenaProcs]
	_     [arenaLine - 8]byte

	// Fixed at creation.
	h      *Heap
	chunk  uintptr // bytes of a general chunk (the first one, if growing)
	grow   bool    // general chunks double up to arenaChunkMax (NewArena)
	bigMin uintptr // rounded requests of this many bytes get a chunk of their own

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

// ArenaStats is an arena's census, exact when no Alloc is running.
type ArenaStats struct {
	AllocBytes     uint64 // bytes handed out since NewArena or the last Reset, each rounded up to 16
	WasteBytes     uint64 // bytes of chunks lost until the next Reset: tails too short for a request
	HeldBytes      uint64 // bytes of the chunks the arena holds from the heap: what it costs the heap
	PeakAllocBytes uint64 // the largest AllocBytes since NewArena, across Resets
	Chunks         int    // chunks the arena holds
}

// arenaReleasedError reports a use of an Arena after Release. It wraps
// ErrClosed.
type arenaReleasedError struct{ op string }

func (e arenaReleasedError) Error() string {
	return "offheap: Arena." + e.op + " after Release"
}

func (arenaReleasedError) Unwrap() error { return ErrClosed }

// errZeroArena is the error of an Alloc from the zero Arena.
var errZeroArena = errors.New("offheap: Arena: no heap (the zero Arena, or one of a nil *Heap): make one with Heap.NewArena on a heap from NewHeap")

// arenaClosedError reports a use of an Arena after its heap's Close.
func arenaClosedError(op string) error { return closedError("Arena." + op) }

// NewArena returns an empty arena on h. It takes no memory until the first
// Alloc; its chunks grow from 64 KiB to 1 MiB, so it holds at most about
// twice what it hands out, and requests of 16 KiB or more get a chunk of
// their own.
func (h *Heap) NewArena() *Arena {
	return newArena(h, arenaChunkDefault, true)
}

// NewArenaSize is NewArena with every chunk chunkSize bytes (rounded up to a
// multiple of 8 KiB, at least 64 KiB): small chunks for many small arenas,
// large ones for fewer trips to the heap. It panics if chunkSize is not
// positive or too large for the heap.
func (h *Heap) NewArenaSize(chunkSize int) *Arena {
	if chunkSize <= 0 {
		panic(fmt.Sprintf("offheap: NewArenaSize(%d): invalid chunk size: it must be positive (NewArena chooses the chunks itself)", chunkSize))
	}
	if most := h.pages.MostBytes(); uint64(chunkSize) > most {
		panic(fmt.Sprintf("offheap: NewArenaSize(%d): chunks larger than the %s this heap's address space can hold would make every allocation fail; use a smaller chunk size", chunkSize, pageheap.SizeString(most)))
	}
	return newArena(h, pageheap.AlignUp(max(uintptr(chunkSize), arenaChunkMin), pageSize), false)
}

func newArena(h *Heap, chunk uintptr, grow bool) *Arena {
	n := min(runtime.GOMAXPROCS(0), arenaMaxLanes)
	return &Arena{h: h, chunk: chunk, grow: grow, bigMin: chunk / 4,
		lanes: make([]arenaLane, n), spareGen: make([][]*arenaChunk, n)}
}

// lane is the lane of the calling goroutine's P.
func (a *Arena) lane() int {
	pid := pin.Pin()
	pin.Unpin()
	return pid % len(a.lanes)
}

// Stats returns the arena's census: exact when no Alloc is running, zero
// after Release. It panics after the heap's Close.
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
