package offheap

import "sync/atomic"

// How a Ref carries its heap: the offsets and lengths it packs, and each
// heap's tag in their top bits. NewHeap draws the tag; Ref, Bytes and the
// messages read it.

const (
	refShift = 48
	refMax   = 1 << refShift // offsets and lengths are below refMax
)

// refKey is a heap's tag, placed where a Ref carries it: the tag's high half
// in the top bits of off and its low half in the top bits of n.
type refKey struct{ off, n uint64 }

// refTags numbers heaps for their Refs' tags.
var refTags atomic.Uint32

// newRefKey gives a new heap the next tag, skipping 0 so that the zero Ref
// matches no heap.
func newRefKey() refKey {
	t := refTags.Add(1)
	if t == 0 {
		t = refTags.Add(1)
	}
	return refKey{uint64(t>>16) << refShift, uint64(t&0xffff) << refShift}
}

// tag is the key's 32-bit tag, for messages.
func (k refKey) tag() uint32 { return uint32(k.off>>refShift)<<16 | uint32(k.n>>refShift) }
