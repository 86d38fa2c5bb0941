package offheap

// The fast paths' two halves, written once: the pop of a block from a stack
// with its clearing (Alloc's, AllocUnzeroed's, a Local's, Realloc's), the
// check of a block a Free gives back (the pagemap word says it starts a
// small block, and its double-free key is not there) and its push (Free's,
// a Local's, a magazine's). Each is nosplit and small enough to inline into
// its callers, which the fast paths need: a call level costs a pair about a
// nanosecond. Verify with
//
//	go build -gcflags=-m 2>&1 | grep fastpath
//	go tool objdump -s 'Heap\).(Free|allocFast)$' <binary>
//
// (every helper "can inline", and no CALL to one in Free or allocFast).

// pop takes a block of class c for the fast path, or returns 0: the stack
// is empty, or this allocation is to be sampled (sampleAt). The caller is
// the stacks' owner: pinned to a magazine's P, or a Local's goroutine. It
// inlines into the fast paths.
func (s *stacks) pop(c uint8) uintptr {
	// Two returns, not one of a named result: both refusals then share the
	// block that returns 0, and the caller's test of the result has one
	// zero to merge, not two.
	mc := &s.cls[c]
	if mc.n != 0 && mc.hits != mc.sampleAt {
		mc.n--
		mc.hits++
		a := s.slots[c][uint8(mc.n)] // mc.n < maxDepth, 256: the conversion only drops the bounds check
		raceAcquire(ptr(a))          // race builds: after the block's last Free
		return a
	}
	return 0
}

// popZeroed pops a block of class c for n bytes from the stack and zeroes
// them, or returns 0 (see pop): the key too, since n > 8 bytes from the
// start reach its word. The caller owns the stack and keeps
// the block mapped meanwhile: pinned, or in a nosplit section after
// fastSize was seen nonzero.
//
//go:nosplit
func (s *stacks) popZeroed(c uint8, n int) (a uintptr) {
	if a = s.pop(c); a != 0 {
		clear(bytesAt(a, n))
	}
	return a
}

// popUnzeroed is popZeroed for a block left as it is but for its
// double-free key, which it clears (an 8-byte block has none).
//
//go:nosplit
func (s *stacks) popUnzeroed(c uint8, n int) (a uintptr) {
	if a = s.pop(c); a != 0 && n > 8 {
		(*[2]uint64)(ptr(a))[1] = 0
	}
	return a
}

// clearBlock readies the n bytes at a that an allocation hands out from
// the slow path: it zeroes them, as popZeroed, or with zero false clears
// only the key, as popUnzeroed.
//
//go:nosplit
func clearBlock(a uintptr, n int, zero bool) {
	if zero {
		clear(bytesAt(a, n))
	} else if n > 8 {
		(*[2]uint64)(ptr(a))[1] = 0
	}
}

// smallStart reports whether a starts a block of a small class, e being
// the pagemap word of a's page, and the class: blockStart for a class the
// word names. It says nothing of whether the block is free (claim's key
// does). The fast check of Free, Local.Free and Relocate; it
// inlines into them. It reads the word's class and page index in place,
// the expressions of pageheap.WordClass and WordIndex, the one reading of
// the encoding outside pagemap.go: through the accessors the compiler
// schedules Free's loads in another order, and the fast path measured is
// this one. TestSmallStartAndClaim fails if the two readings part.
//
//go:nosplit
func smallStart(a uintptr, e uint64) (c uint8, ok bool) {
	c = uint8(e)
	if k := c - 1; k < numClasses-1 {
		ci := &(*[numClasses - 1]classInfo)(classInfos[1:])[k] // classInfos[c], no bounds check
		o := uint64(a&(pageSize-1)) | uint64(uint32(e)>>8)<<pageShift
		q := o * ci.divMul >> 40
		ok = o == q*uint64(ci.size) && q < uint64(ci.blocks)
	}
	return c, ok
}

// blockStart reports whether a starts a block of the small class whose
// info is ci, e being the pagemap word of a's page (blockIn): the test
// every Free makes, Heap.Free's and Local.Free's fast paths included. It
// is nosplit, as they are, and inlines into them.
//
//go:nosplit
func blockStart(a uintptr, e uint64, ci *classInfo) bool {
	q, into := blockIn(a, e, ci)
	return into == 0 && q < uint64(ci.blocks)
}

// claim marks the block of class c at a, a block start (smallStart), as
// freed by writing the heap's key into its second word, and reports false,
// writing nothing, when the key is there already: the block may be free,
// which the slow path's exact check decides. An 8-byte
// block has no second word and no key.
//
//go:nosplit
func (h *Heap) claim(a uintptr, c uint8) bool {
	return c == 1 || h.claimKey(a)
}

// claimKey is claim for a block of a class with a key (above 1), which
// the fast paths call themselves: Local.Free, which knows the class from
// cap, and Free, after its own test of the class. It has one test, so that inlined its two returns merge into the flags of
// the key's compare and the caller's branch is that compare's: claim's
// class test in here made a third return whose merge the compiler tests
// again, a move, a jump and a test more.
//
//go:nosplit
func (h *Heap) claimKey(a uintptr) bool {
	kw := &(*[2]uint64)(ptr(a))[1]
	if *kw != h.key {
		*kw = h.key
		return true
	}
	return false
}

// keyed reports whether the block of class c at a, a block start, holds the
// heap's key: claim's test, for the paths that look before they free.
//
//go:nosplit
func (h *Heap) keyed(a uintptr, c uint8) bool {
	return c != 1 && (*[2]uint64)(ptr(a))[1] == h.key
}

// room reports whether the stack of class c has room for a push.
//
//go:nosplit
func (s *stacks) room(c uint8) bool {
	mc := &s.cls[c]
	return mc.n < mc.cap
}

// slot returns the depth of the stack of class c, where its next push
// goes, and whether it has room for one: room with the depth, for addAt,
// for a caller that writes through a block's address between the two
// (Local.Free's claimKey), after which the compiler cannot tell the depth
// unchanged and would load it again.
//
//go:nosplit
func (s *stacks) slot(c uint8) (k uint32, ok bool) {
	mc := &s.cls[c]
	return mc.n, mc.n < mc.cap
}

// add pushes block a of class c and counts the Free. The caller owns the
// stack, which has room (room), and has released the block to the race
// detector.
//
//go:nosplit
func (s *stacks) add(c uint8, a uintptr) {
	s.addAt(c, s.cls[c].n, a)
}

// addAt is add at depth k, which slot returned.
//
//go:nosplit
func (s *stacks) addAt(c uint8, k uint32, a uintptr) {
	mc := &s.cls[c]
	s.slots[c][uint8(k)] = a // k < maxDepth
	mc.n = k + 1
	mc.frees++
}

// put is add where the stack has room, with the block's release to the race
// detector, and reports whether it had.
//
//go:nosplit
func (s *stacks) put(c uint8, a uintptr) bool {
	if !s.room(c) {
		return false
	}
	raceRelease(ptr(a)) // race builds: to the Alloc that takes it
	s.add(c, a)
	return true
}

// The stacks' indexes are converted to uint8 in pop and add, which drops
// the bounds check and is exact only while maxDepth is 256.
var _ [maxDepth - 256]struct{}
var _ [256 - maxDepth]struct{}
