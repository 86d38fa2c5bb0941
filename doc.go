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
//   - Heap, for blocks that live and die one by one (a cache's values, a
//     database's pages): NewHeap, then Alloc, Free and Realloc, from any
//     goroutine; Relocate moves a value out of a span its neighbours'
//     frees left sparse, so that a cache that evicts can give the memory
//     back. Most programs need one Heap.
//   - Cache, for a goroutine that allocates and frees many blocks over a
//     long life (a worker of a pool, a connection's loop): Heap.NewCache
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
// Free (and FreeSlice, Free[T] and Realloc) takes the block that its slice
// starts, whatever the slice's length: Free(b[:0]) frees b's block; a slice
// of capacity 0 (nil, or Alloc(0)'s) is no block and is ignored. In every
// mode Free panics with a message that starts "offheap:", and leaves the
// heap as it was, on an address this heap did not allocate or that lies
// inside a block, a large block that is not allocated, an Arena's memory
// (freed by its Reset or Release), a Shared's bytes (freed by its last
// Release), and a closed heap. Fast mode also catches a second Free of a
// block of 16 bytes or more that is still free ("offheap: double free").
//
// Fast mode does not see, and checked mode does, with the stacks of the
// allocation and of the first free: a double free of an 8-byte block, a
// second Free after the block was allocated again (which frees the new
// owner's block), two Frees of one block racing each other, a write after
// free, a write past a block's length, and leaks.
//
// A write after free in fast mode never steers the heap: whatever the
// program writes into a freed block, no Alloc returns memory outside the
// heap or a block that is live. The links the heap keeps inside free blocks
// are encoded with random per-heap keys and checked before they are
// followed; the Alloc that meets a corrupt one panics with "offheap: heap
// corruption: the free block at 0x... (N bytes) was written after it was
// freed", and the heap abandons those free blocks (Stats.CorruptBytes) and
// works on. The heap's own metadata lies apart from the blocks, behind
// inaccessible guards. Fast mode does not see a write after free that
// leaves the links intact (the block's next owner gets those bytes, zeroed
// by Alloc), nor one after the block was allocated again, which lands in
// its new owner's bytes: checked mode, or SampleRate in production, finds
// the writer.
//
// # Checked mode in tests
//
// Run the tests with the offheapchecked build tag,
//
//	go test -tags offheapchecked ./...
//
// and every Heap becomes a checked heap (Options.Checked makes one). It
// panics with a *MemoryError, with the stacks that allocated and freed the
// block, on each error above, and Close returns a *LeakError that groups the
// blocks still live by the stack that allocated them (Heap.Leaks and
// Heap.MemoryErrors say the same at any moment). A heap from
// offheaptest.New fails its test with both. In production,
// Options.SampleRate puts one allocation in SampleRate on guard pages, so
// that a stray access to it faults at once.
//
// # Profiles
//
// Heap.WriteProfile writes a sampled allocation profile (Options.ProfileRate)
// that go tool pprof reads, naming the lines whose off-heap memory is still
// live; the offheappprof package serves it beside net/http/pprof.
//
// # Page sizes
//
// offheap works on every OS page size from 4 KiB to 64 KiB, read when the
// process starts: 4 KiB on amd64 and most arm64 systems, 16 KiB on Linux
// for Apple silicon and some Android devices, 64 KiB on the arm64 kernels
// of RHEL and Oracle Linux and NVIDIA's for Grace. The heap's own page is
// 8 KiB on every system, and with it the size classes, MagazineBound and
// the speed of Alloc and Free. Where the OS page is larger than 8 KiB, what
// the heap gives back to the system and protects goes in whole OS pages,
// and that is what changes (docs/DESIGN.md, OS pages, has the figures):
//
//   - The smallest unit given back to the operating system (after
//     ReleaseDelay, at Trim, at the Limit) is one OS page, not one 8 KiB
//     page: a free page goes back with the other pages of its OS page, and
//     one that shares its OS page with a page in use stays mapped (in
//     MappedBytes, not ReleasedBytes) until that page is freed too.
//   - A guarded block (GuardPages, SampleRate) takes whole OS pages, its
//     guard page one of them: a sample of 64 bytes costs two OS pages of
//     address space and one resident, 64 KiB of it on a 64 KiB kernel.
//   - ResidentBytes counts whole OS pages, as the kernel does.
//
// Tests see those kernels on any machine under the build tags
// offheappage16k and offheappage64k, which make internal/osmem behave as
// such a kernel does (aligned mappings, EINVAL for an unaligned start,
// lengths rounded up to whole pages that are then protected or released
// whole).
//
// # Concurrency
//
// Every method of Heap is safe for concurrent use except Close. A block may
// be freed by a goroutine other than the one that allocated it. The package
// orders nothing between a write to a block and a read of it on another
// goroutine: synchronize access to the bytes as for any shared []byte, and
// keep a block alive while another goroutine reads it
// (ExampleRef_concurrent).
//
// Close must not run concurrently with other calls on the heap, its Arenas
// or its Shareds (OnLastRelease runs before its Shared's block is freed:
// close after every Release has returned). A call that meets a closed or
// closing heap gets ErrClosed and neither hangs nor faults inside offheap;
// the program's own access to memory of a closed heap faults.
//
// # Race detector
//
// Built with -race, a program's data races on off-heap bytes are reported
// as they are on Go memory: two goroutines that access the same bytes of a
// block (from a Heap, a Cache, an Arena or a Shared), one of them writing,
// with nothing ordering the two, get "WARNING: DATA RACE" and both stacks.
// So does an access after Free that nothing orders before the block's next
// owner's accesses: the race detector sees a read after free on another
// goroutine, which checked mode does not. Correct programs get no report,
// however offheap hands memory from one goroutine to another.
//
// In a race build a heap's memory is Go memory the collector never scans,
// which the detector checks at many times a fast build's cost (figures in
// docs/DESIGN.md); guard pages do not fault, so run guard-page tests
// without -race. Builds without -race do not change.
//
// The module github.com/offheap/offheap/lines is goroutine-safe line output,
// for the programs that print while they allocate. docs/DESIGN.md maps this
// package's files, the layers memory flows through and how race builds work.
package offheap
