package offheap

// Checked mode's side of Shared: a Hot handle of a checked heap counts
// every reference on its count, not per P, so that a Release of a
// reference no Retain returned is seen when it is made, with the stacks of
// the handle's NewShared and of that Release.

import (
	"sync/atomic"

	"github.com/offheap/offheap/internal/callstack"
)

// checkedHot reports whether s is a Hot handle of a checked heap, whose
// Retains and Releases add to its count alone (retainSlow, drop): its
// slots stay 0, and the seal folds nothing.
func (s Shared) checkedHot() bool {
	return s.meta&flagHot != 0 && s.h.checked()
}

// releaseCheckedHot is the Release of a retained reference of a Hot handle
// of a checked heap, between enter and exit; it returns the count's new
// value. While the creator's reference lives the count holds hotBias, the
// creator's 1 and the retained references: a Release that leaves it at
// hotBias or below released a reference no Retain returned (the total
// would be 0 with the creator's Release still to come), and raises a
// *MemoryError of kind OverRelease, the count put back as it was.
func (s Shared) releaseCheckedHot() int64 {
	v := atomic.AddInt64(s.count(), -1)
	if v > hotBias/2 && v <= hotBias {
		atomic.AddInt64(s.count(), 1)
		s.overRelease("a retained reference was released more times than Retain returned one, while the creator's reference is still held: release the value NewShared returned once, and each retained reference once")
	}
	return v
}

// overRelease raises the *MemoryError of kind OverRelease for a Release of
// s that released a reference it did not hold, saying why, with the
// stacks of its NewShared and of this Release.
func (s Shared) overRelease(why string) {
	var st stack // walked from here: the Release's own frames are trimmed (internalFrame)
	again := callstack.Intern(&st, st.Fill(callstack.Walk(&st.PCs)))
	s.h.chk.raise(&MemoryError{Kind: OverRelease, Addr: uintptr(s.data), Size: int(s.meta & sharedLenMask),
		AllocStack: s.h.allocStack(s.block()), AgainStack: stackText(again), detail: why})
}

// liveShared reports whether the live block at a of h, a heap with a
// checker, is a Shared's, and the length NewShared was asked for: such a
// block has a registry entry of h's while its handle lives. An entry left
// by a heap closed with the handle live, at an address h reuses, is that
// heap's. It reads no byte of the block, which its user may be writing.
func (h *Heap) liveShared(a uintptr) (n int, ok bool) {
	r, ok := sharedRecs.Load(a)
	if !ok || r.(*sharedRec).heap != h.key {
		return 0, false
	}
	return r.(*sharedRec).n, true
}
