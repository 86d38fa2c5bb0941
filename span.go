package offheap

// A span is a run of pages cut into blocks of one size class. Its struct lives
// off-heap, in the page heap's span array, found from any block's page word.
//
// Blocks of a span are in one of three places: carved and handed out (live, or
// parked in a magazine), on the span's free list, or not yet carved (the tail
// from carved to the end). live = carved - nfree. A span is on its class's
// partial list while it has a block to give (nfree > 0 or uncarved blocks
// left). All fields are guarded by the class's central lock.
type span struct {
	start  uintptr // address of block 0
	free   uintptr // first block of the free list; blocks link through their first word
	nfree  uint32  // blocks on the free list
	carved uint32  // blocks carved from the start so far
	next   uint32  // partial list neighbours, by span id; 0 = none
	prev   uint32
	class  uint8
	listed bool // on the partial list
}

// empty reports whether the span holds no live block.
func (s *span) empty() bool { return s.carved == s.nfree }

// exhausted reports whether the span has no block left to give.
func (s *span) exhausted() bool { return s.nfree == 0 && s.carved == classBlocks[s.class] }

// take removes one block from the span, preferring a freed block to carving
// a new one, and reports whether it was carved.
func (s *span) take() (block uintptr, carved bool) {
	if s.nfree > 0 {
		block = s.free
		s.free = *word(block)
		s.nfree--
		raceRelease(ptr(block)) // race builds: to the Alloc that gets it, maybe through a magazine (race.go)
		return block, false
	}
	block = s.start + uintptr(s.carved)*uintptr(classSize[s.class])
	s.carved++
	raceRelease(ptr(block)) // race builds: as above, and the page heap's past (race.go)
	return block, true
}

// put pushes a block onto the span's free list.
func (s *span) put(block uintptr) {
	*word(block) = s.free
	s.free = block
	s.nfree++
}
