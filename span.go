package offheap

import (
	"unsafe"

	"github.com/offheap/offheap/internal/pageheap"
)

// A span is a run of pages cut into blocks of one size class. Its struct lives
// off-heap, in the page heap's span array, found from any block's page word.
//
// Blocks of a span are in one of three places: carved and handed out (live, or
// parked in a magazine), on the span's free list, or not yet carved (the tail
// from carved to the end). live = carved - nfree. A span is on its class's
// partial list while it has a block to give (nfree > 0 or uncarved blocks
// left). All fields are guarded by the class's central lock.
//
// The free list links blocks through their first word, encoded and checked: a
// write after free cannot steer take to anything but a
// block of the span.
type span struct {
	start  uintptr // address of block 0
	free   uint32  // the free list's first block, as index+1 (0 when nfree is 0)
	nfree  uint32  // blocks on the free list
	carved uint32  // blocks carved from the start so far
	next   uint32  // partial list neighbours, by span id; 0 = none
	prev   uint32
	class  uint8
	listed bool // on the partial list
}

// The span array's stride is the struct's size on 64-bit systems, the
// only ones with a backend; elsewhere the package only compiles, and the
// smaller struct fits the stride.
var _ = [1]struct{}{}[(int(unsafe.Sizeof(span{}))-pageheap.SpanBytes)*int(unsafe.Sizeof(uintptr(0))/8)]

// spanAt is the struct of span id in the page heap's span array.
func spanAt(ph *pageheap.Heap, id uint32) *span {
	return (*span)(ph.SpanSlot(id))
}

// empty reports whether the span holds no live block.
func (s *span) empty() bool { return s.carved == s.nfree }

// exhausted reports whether the span has no block left to give.
func (s *span) exhausted() bool { return s.nfree == 0 && s.carved == classBlocks[s.class] }

// block is the address of the block with index+1 i.
func (s *span) block(i uint32) uintptr {
	return s.start + uintptr(i-1)*uintptr(classSize[s.class])
}

// take removes one block from the span, preferring a freed block to carving
// a new one, and reports whether it was carved. It reports ok false, and
// changes nothing, when the free list's first block was written after its
// Free (follow); the caller abandons the list (central.abandon). k and key
// are the heap's free-list keys and double-free key.
func (s *span) take(k *listKeys, key uint64) (block uintptr, carved, ok bool) {
	if s.nfree > 0 {
		block = s.block(s.free)
		next, ok := s.follow(k, key, block, s.nfree-1)
		if !ok {
			return block, false, false
		}
		*word(block) = 0 // a cycle back to the block finds no link (follow)
		s.free = next
		s.nfree--
		raceRelease(ptr(block)) // race builds: to the Alloc that gets it, maybe through a magazine
		return block, false, true
	}
	block = s.start + uintptr(s.carved)*uintptr(classSize[s.class])
	s.carved++
	raceRelease(ptr(block)) // race builds: as above, and the page heap's past
	return block, true, true
}

// put pushes block i-1 of the span, at address block, onto its free list.
func (s *span) put(k *listKeys, key uint64, block uintptr, i uint32) {
	s.link(k, key, block, s.free)
	s.free = i
	s.nfree++
}

// link writes the free list's link into the free block at block of span s:
// next, the next block's index+1 (0: the end), encoded, and the double-free
// key for a block that has room for it.
func (s *span) link(k *listKeys, key uint64, block uintptr, next uint32) {
	*word(block) = uintptr(uint64(next) ^ k.mask(block))
	if s.class != 1 {
		*(*uint64)(ptr(block + 8)) = key
	}
}

// follow checks the free block at block, the head of s's list with rest
// blocks after it, and returns its link: the next block's index+1. It
// reports false if the block was written after its Free: its key is gone,
// or its link decodes to no carved block of s, or to something other than
// the end when rest is 0.
func (s *span) follow(k *listKeys, key uint64, block uintptr, rest uint32) (uint32, bool) {
	if s.class != 1 && *(*uint64)(ptr(block + 8)) != key {
		return 0, false
	}
	next := uint64(*word(block)) ^ k.mask(block)
	if rest == 0 {
		return 0, next == 0
	}
	return uint32(next), next-1 < uint64(s.carved)
}

// allocSpan makes a span for class c from the page heap ph's pages. The
// span's struct is made under the page heap's lock, before any reader of
// the pagemap can find it.
func allocSpan(ph *pageheap.Heap, c uint8) (uint32, *span, error) {
	var s *span
	id, err := ph.AllocSpan(uint32(classPages[c]),
		func(i, id uint32) uint64 { return pageheap.SmallWord(c, i, id) },
		func(id uint32, start uintptr) {
			s = spanAt(ph, id)
			*s = span{start: start, class: c}
		})
	return id, s, err
}

// freeSpan gives span id, empty, back to the page heap ph.
func freeSpan(ph *pageheap.Heap, id uint32, s *span) {
	ph.FreeSpan(id, s.start, uint32(classPages[s.class]))
}
