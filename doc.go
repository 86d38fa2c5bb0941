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
// block still live with the stack that allocated it. Options.Checked does
// the same for one heap. In production, Options.SampleRate puts one
// allocation in SampleRate on guard pages, so that a stray access to it
// faults at once.
//
// # The layers
//
// For readers of the code: memory flows through four layers; each is a file
// of this package.
//
//   - magazine.go: each P (see runtime.GOMAXPROCS) has a magazine, a capped
//     stack of free blocks per size class. Alloc pops and Free pushes with the
//     goroutine pinned to its P: no lock, no atomic, no shared cache line.
//     This is the fast path; it also counts every operation for Stats.
//   - central.go: per size class, under one lock, a depot of whole batches
//     and the spans that have free blocks. An empty magazine refills from it
//     in a batch; a full one hands half of itself over as one batch, which
//     the depot keeps (up to 256 KiB or four batches per class) for the
//     next refill, so a producer and a consumer trade batches without
//     touching spans. With magazines off (Options.MagazineDepth < 0) every
//     operation comes here: that is the control every speed claim is
//     measured against.
//   - span.go, sizeclass_table.go: a span is a run of pages cut into blocks of
//     one of the size classes (8 bytes to 256 KiB, at most 1/8 waste above
//     128 bytes). Blocks are carved on demand and kept on the span's free list.
//     An empty span goes back to the page heap.
//   - pages.go, region.go, large.go: the page heap cuts the heap's address
//     space, regions reserved with mmap as the heap grows, into 8 KiB pages,
//     commits runs of them on demand, and gives free runs back to the
//     operating system (madvise) after Options.ReleaseDelay or at Trim.
//     Blocks above 256 KiB are page runs of their own.
//
// Trim takes every P's magazine out of service, waits until no goroutine can
// be inside one (quiesce.go: a stop of the world, which cannot complete while
// a goroutine is pinned), and empties them into the central lists.
//
// census.go sums every counter into Stats, and into InUse without a lock;
// resident.go asks the operating system which committed pages are resident;
// golimit.go keeps the Go runtime's memory limit clear of what the heaps map
// (LimitGoMemory). The subpackage offheapexpvar and the module offheapprom
// export Stats to expvar and Prometheus. The unsafe conversions between
// addresses and pointers are in unsafe.go, the one runtime linkname (procPin)
// in internal/pin, and the system calls in internal/osmem.
//
// Built on the heap:
//
//   - checked.go, checked_small.go, guard.go: checked mode (Options.Checked,
//     the offheapchecked build tag): per-block records with stacks, poison
//     and a quarantine, canaries past the end, leaks at Close, and guard pages
//     for every allocation (GuardPages) or a sample of them (SampleRate).
//   - arena.go: Arena, a bump allocator many goroutines fill at once, freed
//     by one Reset or Release.
//   - shared.go: Shared, reference-counted buffers, with immortal (Static)
//     handles and per-P counting (Hot) for handles every core retains.
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
// # Concurrency
//
// Every method of Heap is safe for concurrent use except Close. A block may be
// freed by a goroutine other than the one that allocated it; it goes to the
// freeing P's magazine. The package makes no ordering guarantee between a
// write to a block and a read of it on another goroutine: synchronize access
// to the bytes as you would for any shared []byte.
package offheap
