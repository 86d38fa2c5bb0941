// Package offheap gives Go programs manual memory that the garbage collector
// never scans, and that stays fast when every core allocates at once.
//
// Memory from a Heap lives outside the Go heap: the collector neither scans
// nor frees it, so millions of live blocks cost no GC cycle anything, and a
// program frees each explicitly.
//
//	h, err := offheap.NewHeap(offheap.Options{})
//	if err != nil {
//		return err // wraps errors.ErrUnsupported where the system has no backend
//	}
//	defer h.Close() // last: Close unmaps the heap's memory
//
//	b := h.Alloc(64) // 64 zeroed bytes the collector never scans
//	copy(b, "hello")
//	b = h.Realloc(b, 4096) // grow with Realloc, never with append
//	h.Free(b)              // b must not be used after this
//
// # Choosing a type
//
//   - Package cache (github.com/offheap/offheap/cache), for a key-value
//     cache: values by key, evicted to stay within a bound on all the
//     memory it maps, with TTLs and snapshots; its index, keys and values
//     all live off the Go heap.
//   - Heap, for blocks that live and die one by one (a database's pages, a
//     broker's messages): NewHeap, then Alloc, Free and Realloc, from any
//     goroutine; Relocate (RelocateAll, for a batch) moves a value out of
//     a span its neighbours' frees left sparse, so that a cache that evicts
//     can give the memory back. Most programs need one Heap.
//   - Local, for a goroutine that allocates and frees many blocks over a
//     long life (a worker of a pool, a connection's loop): Heap.NewLocal
//     gives it a stock of free blocks of its own, which it reaches without
//     pinning to its P, for less than a Heap's Alloc and Free cost.
//   - Arena, for many small allocations that die together (one request, one
//     batch): Heap.NewArena, Alloc from any number of goroutines at once,
//     then one Reset (to fill it again) or Release.
//   - Shared, for a buffer several owners hold until the last one lets go (a
//     message fanned out to subscribers): Heap.NewShared, Retain and
//     Release. Hot makes a handle that every core retains scale;
//     StaticShared wraps bytes that never die.
//   - Ref, for millions of values indexed by key: a 16-byte handle to a
//     block, with no Go pointer in it, that a map can hold without the
//     collector ever scanning the map (Heap.Ref, Heap.Bytes).
//   - Buffer, for a value built with io or fmt: a growable byte buffer in
//     one block (Heap.NewBuffer).
//   - New, MakeSlice, ReallocSlice, Free and FreeSlice, for values and
//     slices of pointer-free types, from a Heap or an Arena.
//
// # The rules
//
//  1. Never store Go pointers in off-heap memory: no pointers, strings,
//     slices, maps, channels, functions or interfaces. The collector does not
//     see them there and may free what they point to. New and MakeSlice
//     refuse such types, naming the field.
//  2. Never use a slice after Free, and free each slice once. Checked mode
//     catches both, except a read after free (see Race detector below).
//
// Grow a block with Realloc, not append: append on a full slice copies it
// to a new array on the Go heap, which Free refuses.
//
// # What Free checks
//
// Free (and FreeSlice, Free[T], Realloc) takes the block its slice starts,
// whatever its length; a slice of capacity 0 is no block and is ignored. In
// every mode Free panics with an "offheap:" message, leaving the heap as it
// was, on an address this heap did not allocate or inside a block, a large
// block not allocated, an Arena's memory, a Shared's bytes, and a closed
// heap; fast mode also catches a second Free of a free block of 16 bytes or
// more ("offheap: double free"). Checked mode also sees, with stacks, an
// 8-byte block's double free, a Free after the block was allocated again,
// racing Frees, writes after free and past a block's end, and leaks.
//
// A write after free in fast mode never steers the heap: no Alloc returns
// memory outside the heap or a live block. The links kept in free blocks are
// encoded with random per-heap keys and checked before they are followed; a
// corrupt one makes its Alloc panic with "offheap: heap corruption: the free
// block at 0x... (N bytes) was written after it was freed", and the heap
// leaves those blocks (Stats.CorruptBytes) and works on. Fast mode does not
// see a write that leaves the links intact, nor one after the block was
// allocated again: checked mode, or GuardOneIn in production, finds those.
//
// # Checked mode in tests
//
// Run the tests with the offheapchecked build tag,
//
//	go test -tags offheapchecked ./...
//
// and every Heap becomes a checked heap (Options.Checked makes one): it
// panics with a *MemoryError carrying the stacks, and Close returns a
// *LeakError grouping live blocks by allocation stack (Heap.Leaks and
// Heap.MemoryErrors say the same at any moment); offheaptest.New fails a
// test with both. In production, Options.GuardOneIn puts one allocation in
// GuardOneIn on guard pages, so that a stray access to it faults at once.
//
// # Profiles
//
// Heap.WriteProfile writes a sampled allocation profile (Options.ProfileBytes)
// that go tool pprof reads, naming the lines whose off-heap memory is still
// live; the offheappprof package serves it beside net/http/pprof.
//
// # Page sizes
//
// offheap works on every OS page size from 4 KiB to 64 KiB (16 KiB on
// Linux for Apple silicon, 64 KiB on RHEL's and NVIDIA's arm64 kernels),
// read at startup. The heap's page, its size classes and its speed are the
// same on all; where the OS page is larger than 8 KiB, memory goes back to
// the system in whole OS pages (a free page waits for the rest of its OS
// page), a guarded block takes whole OS pages, and ResidentBytes counts
// them. The build tags offheappage16k and offheappage64k make tests see
// such a kernel on any machine (docs/DESIGN.md, OS pages).
//
// # Concurrency
//
// Every method of Heap is safe for concurrent use except Close, and any
// goroutine may free a block. Nothing orders a write to a block before a
// read of it on another goroutine: synchronize as for any shared []byte,
// and keep a block alive while another goroutine reads it
// (ExampleRef_concurrent). Close must not run concurrently with other calls
// on the heap, its Arenas or its Shareds; a call that meets a closed heap
// gets ErrClosed and neither hangs nor faults inside offheap.
//
// # Race detector
//
// Built with -race, data races on off-heap bytes are reported as on Go
// memory: two goroutines accessing the same bytes of a block, one writing,
// with nothing ordering them, get "WARNING: DATA RACE" and both stacks; so
// does an access after Free that nothing orders before the next owner's, a
// read after free that checked mode does not see. Correct programs get no
// report. Guard pages do not fault in race builds: test them without -race.
//
// The module github.com/offheap/offheap/lines is goroutine-safe line output.
// docs/DESIGN.md maps this package's files, layers and race builds.
package offheap
