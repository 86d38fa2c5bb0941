package offheap

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"unsafe"
)

// A Shared's state: the handle, its header's flags and counts, and the
// registry of handles with Go-side state. The fast Retain and Release
// (shared.go), the Hot slots, the slow paths and checked mode's side read
// it.

// Shared is a reference-counted handle to bytes: n off-heap bytes from
// Heap.NewShared, freed after the last Release, or any []byte made immortal
// by StaticShared. Copy it freely, but release each reference once; Retain
// returns a new one. The zero Shared holds nothing, and Release ignores it.
// Retain and Release are safe for concurrent use, but do not synchronize the
// bytes: write them before sharing the handle.
type Shared struct {
	data unsafe.Pointer // first byte of the data; nil in the zero Shared
	h    *Heap          // the heap that owns the block; nil for Static
	meta uint64         // length (low 48 bits) | flags
}

const (
	sharedHdr = 16 // bytes before the data: the free-list word and the count

	sharedLenBits = 48
	sharedLenMask = 1<<sharedLenBits - 1

	flagStatic  = 1 << 56 // immortal: Retain and Release touch nothing
	flagHot     = 1 << 57 // per-P slots after the data
	flagOwner   = 1 << 58 // the creator's reference of a Hot handle: its Release seals
	flagRec     = 1 << 59 // the registry has an entry for the block
	flagChecked = 1 << 60 // a heap with a checker (checked or sampled): the registry entry is the liveness check
	flagHeap    = 1 << 61 // a heap handle (not Static, not zero)

	// sharedKinds are the flags that send Retain and Release off their inline
	// path unless the handle is a plain heap handle (flagHeap alone).
	sharedKinds = flagStatic | flagHot | flagChecked | flagHeap

	// hotBias is held in a Hot handle's count while its slots are live. Real
	// counts and slot values stay far below 2^61 in magnitude.
	hotBias = 1 << 62
	// slotSealed is what the fold swaps into each slot; a slot add that
	// returns less than slotSealedBelow landed on a sealed slot.
	slotSealed      = -1 << 62
	slotSealedBelow = -1 << 61
	// countDead is stored in the count by the last release.
	countDead = -1 << 62

	hotPerP   = 0 // mode: slots live
	hotSealed = 1 // mode: slots folded into the count

	hotLine     = 64   // a slot's cache line
	maxHotSlots = 1024 // P ids at or beyond this use the count
)

// sharedRec is a handle's Go-side state: its callback and length. In checked
// heaps every live handle has one, and its presence is the liveness check.
type sharedRec struct {
	onRelease func(b []byte)
	n         int    // the bytes NewShared was asked for, which a leak report gives
	heap      uint64 // the heap's key: an entry a closed heap left is no other heap's (liveShared)
}

// sharedRecs maps a block address (uintptr) to its *sharedRec.
var sharedRecs sync.Map

// sharedMark, xored with the block's address, is what a live handle's block
// holds in its first word: see sharedBlock.
var sharedMark = uintptr(rand.Uint64())

// sharedBlock reports whether address a, inside the small block at start, is
// the bytes of a live Shared: for Free's message. User data that happens to
// hold the mark only changes that message.
func sharedBlock(start, a uintptr) bool {
	return a == start+sharedHdr && *word(start) == sharedMark^start
}

// sharedClosedError reports a call on a handle whose heap is closed.
func sharedClosedError(call string) error { return closedError("Shared." + call) }

// staticEmpty is where StaticShared(nil) points, so that it is not the zero
// Shared.
var staticEmpty [1]byte

// count is the handle's count word: the 8 bytes before the data.
func (s Shared) count() *int64 { return (*int64)(unsafe.Add(s.data, -8)) }

// dead reports whether count c is a released handle's: 0 or below
// (countDead, the heap's double-free key, or the zero of a page given back
// to the system). Nothing writes to a dead handle's block, whose page the
// page heap may count clean: a stale Retain's or Release's write there would
// reach a later Alloc that trusts the page to read as zeros. Every add to a
// count or a Hot handle's slot or mode word of a handle that may be stale
// tests the count first; only a block reused by another allocation, whose
// count word holds someone else's bytes, can still be written.
func dead(c int64) bool { return c <= 0 }

// block is the address h.Alloc returned for the handle.
func (s Shared) block() uintptr { return uintptr(s.data) - sharedHdr }

func (s Shared) live() bool { _, ok := sharedRecs.Load(s.block()); return ok }
func (s Shared) describe() (string, uintptr) {
	return fmt.Sprintf("the %d-byte Shared at %#x", s.meta&sharedLenMask, uintptr(s.data)), s.block()
}

// plain reports whether s takes the inline paths of Retain and Release.
func (s Shared) plain() bool {
	return s.meta&sharedKinds == flagHeap
}
