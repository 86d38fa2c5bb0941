// Package offheap gives Go programs manual memory that the garbage collector
// never scans, and that stays fast when every core allocates at once.
//
// Programs that keep millions of byte slices alive (caches, databases,
// brokers) pay for them on every GC cycle. Memory from a Heap lives outside
// the Go heap: the collector neither scans nor frees it, and a program frees
// it explicitly with Free.
//
// # The rules
//
//  1. Never store Go pointers in off-heap memory: no pointers, strings,
//     slices, maps, channels, functions or interfaces. The collector does not
//     see them there and may free what they point to. New and MakeSlice
//     refuse such types.
//  2. Never use a slice after Free, and free each slice once. Checked mode
//     (Options.Checked, or the offheapchecked build tag) catches both.
//
// Grow a block with Realloc, not append: append on a full slice copies it
// to a new array on the Go heap.
//
// # The layers
//
// Memory flows through four layers; each is a file of this package.
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
// census.go sums every counter into Stats. The unsafe conversions between
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
//   - typed.go: New, MakeSlice, Free and FreeSlice for pointer-free types.
//   - realloc.go: Realloc, in place when the new size needs the same block.
//
// # Concurrency
//
// Every method of Heap is safe for concurrent use except Close. A block may be
// freed by a goroutine other than the one that allocated it; it goes to the
// freeing P's magazine. The package makes no ordering guarantee between a
// write to a block and a read of it on another goroutine: synchronize access
// to the bytes as you would for any shared []byte.
package offheap
