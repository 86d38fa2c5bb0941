// Package offheap gives Go programs manual memory that the garbage collector
// never scans, and that stays fast when every core allocates at once.
//
// Programs that keep millions of byte slices alive (caches, databases,
// brokers) pay for them on every GC cycle. Memory from a Heap lives outside
// the Go heap: the collector neither scans nor frees it, and a program frees
// it explicitly with Free.
//
// # Choosing a type
//
//   - Heap, for blocks that live and die one by one (a cache's values, a
//     database's pages): NewHeap, then Alloc, Free and Realloc, from any
//     goroutine. Most programs need one Heap.
//   - Cache, for a goroutine that allocates and frees many blocks over a
//     long life (a worker of a pool, a connection's loop): Heap.NewCache
//     gives it a stock of free blocks of its own, which it reaches without
//     pinning to its P, at about two thirds of a Heap pair's cost.
//   - Arena, for many small allocations that die together (one request, one
//     batch): Heap.NewArena, Alloc from any number of goroutines at once,
//     then one Reset (to fill it again) or Release.
//   - Shared, for a buffer several owners hold until the last one lets go (a
//     message fanned out to subscribers): Heap.NewShared, Retain and
//     Release. Hot makes a handle that every core retains scale; Static
//     wraps bytes that never die.
//   - Ref, for millions of values indexed by key: a 16-byte handle to a
//     block, with no Go pointer in it, that a map can hold without the
//     collector ever scanning the map (Heap.Ref, Heap.Bytes).
//   - Buffer, for a value built with io or fmt: a growable byte buffer in
//     one block (Heap.NewBuffer).
//   - New, MakeSlice, ReallocSlice, Free and FreeSlice, for values and
//     slices of pointer-free types, from a Heap or an Arena.
//
// The lines package beside this one is goroutine-safe line output, for the
// programs that print while they allocate.
//
// # The rules
//
//  1. Never store Go pointers in off-heap memory: no pointers, strings,
//     slices, maps, channels, functions or interfaces. The collector does not
//     see them there and may free what they point to. New and MakeSlice
//     refuse such types, naming the field.
//  2. Never use a slice after Free, and free each slice once. Checked mode
//     catches both.
//
// Grow a block with Realloc, not append: append on a full slice copies it
// to a new array on the Go heap, which Free refuses.
//
// # Profiles
//
// Every heap samples about one allocation in each 512 KiB allocated
// (Options.ProfileRate), as the Go runtime samples its own, at no cost to
// the fast path, and Heap.WriteProfile writes what it saw as a pprof heap
// profile: go tool pprof -top -lines names the lines whose off-heap memory
// is still live. The offheappprof package serves it at /debug/offheap/heap,
// beside net/http/pprof.
//
// # Checked mode in tests
//
// Run the tests with the offheapchecked build tag,
//
//	go test -tags offheapchecked ./...
//
// and every Heap becomes a checked heap. Its Free panics with a
// *MemoryError, which carries the stacks that allocated and freed the block,
// on a double, invalid or foreign free, and when it finds that a freed block
// was written to or that a write ran past a block's length; Close reports
// what the quarantine still holds, and returns a *LeakError that lists every
// block still live, grouped by the stack that allocated it. Options.Checked
// does the same for one heap. Heap.Leaks lists the live blocks so at any
// moment, and Heap.MemoryErrors returns what the heap found, even where a
// recover swallowed the panic. Package offheaptest makes a test fail with
// them: a heap from offheaptest.New fails its test with every leak and
// memory error when the test ends, whatever the test did with Close's
// error, and offheaptest.VerifyTestMain fails a test binary that leaves a
// checked heap open with either. In production, Options.SampleRate puts one
// allocation in SampleRate on guard pages, so that a stray access to it
// faults at once.
//
// # The layers
//
// For readers of the code: heap.go holds Heap, its Options, NewHeap, Default
// and Trim; alloc.go and free.go hold Alloc's and Free's paths, each a fast
// path a few lines long and a slow path of its own. Memory flows through
// four layers; each is a file of this package.
//
//   - magazine.go: each P (see runtime.GOMAXPROCS) has a magazine, a capped
//     stack of free blocks per size class. Alloc pops and Free pushes with the
//     goroutine pinned to its P: no lock, no atomic, no shared cache line.
//     This is the fast path; it also counts every operation for Stats. The
//     magazines are a per-P set (perp.go), as a checked heap's quarantine
//     rings are.
//   - central.go: per size class, under one lock, a depot of whole batches
//     and the spans that have free blocks. An empty magazine refills from it
//     in a batch; a full one hands half of itself over as one batch, which
//     the depot keeps (up to 256 KiB or four batches per class) for the
//     next refill, so a producer and a consumer trade batches without
//     touching spans. With magazines off (Options.MagazineDepth < 0) every
//     operation comes here: that is the control every speed claim is
//     measured against.
//   - span.go, sizeclass.go, sizeclass_table.go: a span is a run of pages cut
//     into blocks of one of the size classes (8 bytes to 256 KiB, at most
//     1/8 waste above 128 bytes). Blocks are carved on demand and kept on
//     the span's free list. An empty span goes back to the page heap.
//     blockIn (sizeclass.go) turns an address into its block's start, for
//     every caller that needs one.
//   - pages.go, region.go, release.go, large.go: the page heap cuts the
//     heap's address space, regions reserved with mmap as the heap grows,
//     into 8 KiB pages, commits runs of them on demand, and gives free runs
//     back to the operating system (madvise) after Options.ReleaseDelay or
//     at Trim. Blocks above 256 KiB are page runs of their own, as are an
//     arena's chunks and a guarded block's pages; the page heap allocates
//     and frees every such run, and counts it (allocRun, freeRun).
//
// Trim takes every P's magazine out of service, waits until no goroutine can
// be inside one (quiesce.go: a stop of the world, which cannot complete while
// a goroutine is pinned), and empties them into the central lists.
// closing.go holds Close and the protocol by which every access to the
// heap's memory is one that Close waits out before it unmaps.
//
// cache.go holds Cache: per size class a stack like a magazine's, owned by
// one goroutine instead of one P, and reached without the pin; its state is
// off-heap, as a magazine is, and the heap keeps it (cache_set.go) for
// Stats, the double-free check and the next NewCache.
//
// sampling.go decides which allocations are sampled, for the allocation
// profile (profile.go, written by profile_proto.go: WriteProfile) and for
// guard pages (SampleRate), at the cost of one compare the fast path
// already made.
//
// census.go sums every counter into Stats, and into InUse without a lock;
// doublefree.go is fast mode's double-free key; reclaim.go gives back free
// memory before an allocation fails at the Limit; resident.go asks the
// operating system which committed pages are resident; golimit.go keeps the
// Go runtime's memory limit clear of what the heaps map (LimitGoMemory).
// The subpackage offheapexpvar and the module offheapprom export Stats to
// expvar and Prometheus; offheappprof serves the profile over HTTP, and the
// module internal/profiletest reads it with pprof's own parser. The unsafe conversions between addresses and
// pointers are in unsafe.go, the one runtime linkname (procPin) in
// internal/pin, and the system calls in internal/osmem.
//
// Built on the heap:
//
//   - Checked mode (Options.Checked, the offheapchecked build tag), reached
//     from the heap only where a fast path declined: checked.go (the design,
//     and the checker's entry points), checked_small.go (the small blocks'
//     lock-free paths), checked_record.go (one record per block, in a table
//     that mirrors the heap), checked_quarantine.go (the quarantine and its
//     poison), checked_report.go (the errors, Lookup and leaks),
//     checked_stack.go, checked_depot.go and checked_fp*.go (stacks),
//     guard.go (guard pages for every allocation, GuardPages, or a sample of
//     them, SampleRate) and checked_ref.go (Ref and Bytes of checked blocks).
//   - arena.go, arena_alloc.go, arena_heap.go: Arena, a bump allocator many
//     goroutines fill at once, freed by one Reset or Release.
//   - shared.go, shared_slow.go, shared_hot.go, shared_drain.go: Shared,
//     reference-counted buffers, with immortal (Static) handles, per-P
//     counting (Hot) for handles every core retains, and OnRelease callbacks
//     run outside every lock.
//   - typed.go: New, MakeSlice, ReallocSlice, Free and FreeSlice for
//     pointer-free types.
//   - realloc.go: Realloc, in place when the new size needs the same block.
//   - ref.go: Ref, a 16-byte handle to a block that holds no Go pointer, for
//     indexing millions of values in a map the collector never scans
//     (docs/storing-values.md); Heap.Bytes resolves it.
//   - buffer.go: Buffer, a growable byte buffer in one block, for building
//     values with io and fmt.
//   - block.go: what Ref and Buffer know of the layers below (where a block
//     starts, its size, an address as a Ref stores it), in one place.
//
// # What Free checks
//
// Free (and FreeSlice, Free[T] and Realloc, which free as Free does) takes
// the block that its slice starts, whatever the slice's length: Free(b[:0])
// frees b's block. Only a slice of capacity 0 (nil, or Alloc(0)'s) is no
// block and is ignored.
//
// In fast and checked mode alike, Free refuses with a panic whose message
// starts "offheap:", and leaves the heap as it was:
//
//   - an address this heap did not allocate (Go memory, another heap's);
//   - an address inside a block rather than at its start;
//   - a large block (a page run) that is not allocated: freed already, or
//     never handed out;
//   - memory of an Arena, at any address: an arena's memory is freed all at
//     once, by its Reset or Release;
//   - the bytes of a Shared: its last Release frees them;
//   - a heap that is closed.
//
// Fast mode also catches, nearly for free, a second Free of a small block
// that is still free, wherever it waits (a per-P magazine, a depot batch,
// its span): Free writes a random per-heap key into the second word of the
// block it frees, and Alloc clears it; a Free that finds the key makes an
// exact check before it panics with "offheap: double free of 0x... (N
// bytes)", so a live block whose data happens to hold the key frees as
// usual (doublefree.go).
//
// Fast mode does not see, and checked mode (Options.Checked, or the
// offheapchecked build tag) does, with the stacks of the allocation and of
// the first free: a double free of an 8-byte block, whose only word the
// free list needs; a second Free after the block was allocated again, which
// frees the new owner's block; two Frees of one block racing each other; a
// use after free, a write past a block's length, and leaks.
//
// # Concurrency
//
// Every method of Heap is safe for concurrent use except Close. A block may be
// freed by a goroutine other than the one that allocated it; it goes to the
// freeing P's magazine. The package makes no ordering guarantee between a
// write to a block and a read of it on another goroutine: synchronize access
// to the bytes as you would for any shared []byte.
//
// The race detector (go test -race) checks the bytes of blocks as it checks
// any []byte: see Race detector below.
//
// A Shared's OnRelease callback runs on the goroutine of the last Release,
// before its block is freed. A callback that signals another goroutine,
// which then calls Close, races that Free: close a heap only after every
// Release of its handles has returned.
//
// Close must not run concurrently with other calls on the heap, its Arenas
// or its Shareds. A program that breaks the rule gets ErrClosed (returned,
// or panicked in an error that wraps it) from every call that meets the
// closed or closing heap; no call hangs, and none faults inside offheap
// (closing.go). After Close, the one thing that can fault is the program's
// own access to memory the heap handed out: Close unmapped it.
//
// # Race detector
//
// Built with -race (go test -race, go build -race), a program's data races
// on off-heap bytes are reported as they are on Go memory: two goroutines
// that access the same bytes of a block from Alloc, AllocUnzeroed, Realloc,
// New or MakeSlice, of an Arena's allocation or of a Shared's data, one of
// them writing, with nothing ordering the two, get "WARNING: DATA RACE" and
// both stacks. So does a write to a block after its Free that nothing
// orders before the block's next owner's accesses. Correct programs get no
// report, however offheap hands memory from one goroutine to another.
//
// How. Go's race runtime checks an access only when its address lies in
// the Go heap or the data segments, and an mmap reservation lies elsewhere;
// so in a race build each region of a heap is Go memory instead: a
// pointer-free []byte, which the garbage collector never scans
// (region_race.go). The size classes, magazines, spans, census, checked
// mode and metadata are those of any build. What the detector cannot see is
// the per-P magazines and quarantine rings, which only pinning guards, and
// a Cache's stacks, which are off-heap: where a block passes through one,
// offheap annotates it (race.go), as sync.Pool does its items. Every small block's Free ends with a release on the
// block, after its own writes (the double-free key), and every Alloc that
// hands the block out again begins with an acquire, before its zeroing: the
// block's last owner's accesses happen before its next owner's. The rest is
// ordered by locks the detector sees: large blocks, pages given back and
// taken again (the page heap's lock), a region of a closed heap reused by
// a new heap. An Arena's Reset and Release need no edge of their own: the
// program orders them after the arena's users and before its next ones
// (they must not run concurrently with Alloc), and chunks go back to the
// heap under its locks. A Shared's count is Go memory in a race build, and
// its atomics order every Release before the last one's OnRelease and Free.
//
// The allocator's own accesses to a block are ordered by the same edges,
// so they raise no report: the key Free writes, the free-list links of
// spans (a block is acquired before its link is written under the central
// lock, and released when it leaves its span, its link read or the block
// carved: the carving passes on its pages' past), checked mode's poison and
// canaries (a release after Free poisons the block, an acquire before the
// quarantine checks the poison, on whichever goroutine pushes the block
// out, and a release before the block goes back). One part is excluded
// deliberately: an Arena's per-P sub-chunk state, which lives in a heap
// block and is touched pinned; the functions that touch it (Arena.Alloc,
// bump, allocSub) are go:norace, and their clearing of memory claimed
// for a P is hidden with them.
//
// What it costs. The detector checks every access to off-heap bytes, as it
// does Go memory's, and each small Alloc and Free adds an acquire or a
// release: in a race build an Alloc+Free pair of 64 bytes (BenchmarkPair64)
// takes 1.5 to 2 times as long as in a race build whose detector does not
// see the heap, and some 30 times as long as in a fast build (make([]byte,
// 64) takes 2.2 to 2.6 times as long under -race; docs/DESIGN.md has the
// figures).
// The Go runtime counts the regions as its heap: a heap's
// first region is 4 MiB of it, later regions grow as in any build, and
// untouched pages cost no memory (pages are given back with madvise, which
// zeroes Go memory as it does any). A region larger than the machine's
// memory and swap is refused, as address space the system will not give.
//
// What changes. GuardPages and SampleRate keep their layout (a guarded
// block at the end of pages of its own, its canary checked at Free) but
// nothing faults: Go memory cannot be made inaccessible without faulting
// the Go runtime when it reuses it. A use after free of a guarded block is
// reported only if the detector sees it race; run guard-page tests without
// -race. After Close a slice of the heap reads zeros or a later heap's
// bytes instead of faulting, and a write through it races with that heap's
// users. Builds without -race do not change: the annotations compile to
// nothing, and the machine code of every Alloc and Free path is the same.
package offheap
