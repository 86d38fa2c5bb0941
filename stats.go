package offheap

// The figures a heap reports of itself. census.go gathers them; they
// stand apart so that every layer that keeps a count can name its field.

// Stats is a census of a heap, exact once the heap is quiet and a snapshot
// while it is not. MagazineHits + LocalHits + CentralHits + Fresh + Large
// == Allocs.
type Stats struct {
	Allocs, Frees uint64 // every Alloc and Free of a non-empty block, fast path included
	MagazineHits  uint64 // Allocs served by a per-P magazine
	LocalHits     uint64 // Allocs served by a Local's stack, open or closed
	CentralHits   uint64 // Allocs served by a central free list
	Fresh         uint64 // Allocs carved from a span's never-used blocks
	Large         uint64 // Allocs of page runs of their own: large blocks, arena chunks, samples

	LiveBlocks uint64 // Allocs - Frees, arena chunks and Shareds included; never below 0

	InUseBytes uint64 // bytes in live blocks, counted at block size (class size, or whole pages for large)

	// MappedBytes is the address space committed and not released: what
	// Options.Limit bounds. It is not resident memory (ResidentBytes): the
	// system backs a page only when it is first written.
	MappedBytes uint64

	ReleasedBytes uint64 // bytes given back to the operating system and kept reserved for reuse
	MagazineBytes uint64 // bytes of free blocks parked in per-P magazines
	DepotBytes    uint64 // bytes of free blocks in the central depots, waiting for a magazine
	LocalBytes    uint64 // bytes of free blocks held by open Locals (Heap.NewLocal)

	// SpanFreeBytes is the free bytes of small-block spans that no
	// magazine, depot or Local holds: what a Relocate pass may give back.
	SpanFreeBytes uint64

	Relocations uint64 // blocks Relocate moved

	// CorruptBytes is the bytes of free blocks the heap abandoned because
	// a write after free corrupted their free list: 0 without the bug.
	CorruptBytes uint64

	Classes []ClassStats // per size class, smallest first
}

// ClassStats is the census of one size class.
type ClassStats struct {
	Size   int    // block size in bytes
	Allocs uint64 // Allocs served by this class
	Frees  uint64 // Frees of this class
	InUse  uint64 // live blocks: Allocs - Frees, or 0 where an unseen double free made Frees the larger

	SpanFreeBytes uint64 // Stats.SpanFreeBytes of this class
	Relocations   uint64 // blocks of this class Relocate moved
}
