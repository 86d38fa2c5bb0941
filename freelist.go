package offheap

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// A span's free list keeps its links inside the freed blocks, the one place
// where the heap stores its own state in memory that the program may still
// write by mistake (a write after free). So that such a write can never
// make Alloc hand out memory outside the span, the way a poisoned free list
// of a C allocator does, every link is encoded with the heap's secret keys
// and every link is checked before the heap follows it, as mimalloc's secure
// mode does:
//
//   - A free block on a span's list holds in its first word the index+1 of
//     the next block of the list (0 at its end), xored with a mask drawn
//     from the block's own address and two random keys of the heap
//     (listKeys.mask). The link names a block of the span by its index,
//     never an address: whatever it decodes to, the heap turns it into an
//     address only as a block of the span.
//   - A block of 16 bytes or more also holds the heap's double-free key in
//     its second word, written again as it joins the list.
//   - follow, before take moves the list's head on, checks both: the key is
//     there, and the link decodes to a carved block of the span, or to the
//     end where the list's count says it ends. A write over the second
//     word fails the first check every time (unless it writes the key). A
//     word the writer did not compute from the keys (a Go address, a wild
//     one, a live block's, another span's, a link read out of another free
//     block) decodes to a word that names one of the span's at most 8192
//     blocks with a chance below 2^-50: where glibc's safe-linking lets one
//     corrupt pointer in 16 through, this lets none through in practice.
//   - take clears the link of the block it hands out, so that a list that
//     cycles back to it (a block on the list twice) fails the check too.
//
// A failed check abandons the rest of the span's list (central.abandon):
// its blocks are never handed out again, and Stats counts their bytes as
// CorruptBytes. Allocs go on from the span's uncarved blocks and other
// spans, and the Alloc that found it panics, with no lock held, with a
// message that names the block (corruptError).
//
// Magazines, depot batches and a Local's stacks keep their blocks'
// addresses in the heap's own metadata, not in the blocks: a write after
// free into a block waiting there changes the block's bytes, which its next
// owner gets (zeroed by Alloc), and never where an Alloc goes. The metadata
// is mapped apart from the blocks, whose regions lie between guards
// (pageheap.RegionGuard; docs/DESIGN.md, What lives where).
//
// What this does not see: a write after the block was allocated again,
// which lands in its new owner's bytes (no allocator can tell); a write
// into a free block's bytes past its second word; a writer that read the
// keys out of freed blocks and forges a link to another block of the same
// span. Checked mode and GuardOneIn see writes after free where they
// happen.

// newKey draws a heap's key: below -2^62 as an int64 (the top bit set, the
// next clear), so that a count word holding it is hugely negative, and odd,
// so that zeroing the block's first bytes changes it.
func newKey() uint64 {
	return rand.Uint64()&^(1<<62) | 1<<63 | 1
}

// listKeys are a heap's secret keys for its free lists' links, random at
// NewHeap.
type listKeys struct {
	mul uint64 // odd: multiplying by it spreads an address's low bits over the word
	xor uint64
}

func newListKeys() listKeys {
	return listKeys{mul: rand.Uint64() | 1, xor: rand.Uint64()}
}

// mask is what the link stored in the free block at block is xored with.
// Two blocks' masks differ in bits all over the word, so that a link
// copied from one free block to another does not decode to a block.
func (k *listKeys) mask(block uintptr) uint64 {
	return bits.RotateLeft64(uint64(block)*k.mul, 29) ^ k.xor
}

// corruptError is a free list that failed its check: the free block at
// addr, of size bytes, was written after its Free. Allocs panic with its
// message (panicCorrupt), never return it.
type corruptError struct {
	addr uintptr
	size uint32
}

func (e *corruptError) Error() string {
	return fmt.Sprintf("offheap: heap corruption: the free block at %#x (%d bytes) was written after it was freed; "+
		"the heap abandons the free blocks of its span (Stats.CorruptBytes) and goes on; "+
		"Options.Checked (or, in production, Options.GuardOneIn) reports where the program writes a freed block",
		e.addr, e.size)
}

// panicCorrupt panics with err's message if err is a corrupt free list,
// for an allocation that holds no lock and nothing that Close waits for.
func panicCorrupt(err error) {
	if e, ok := err.(*corruptError); ok {
		panic(e.Error())
	}
}
