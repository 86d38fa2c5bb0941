package offheap

// The slow paths of Shared's Retain and Release: everything their inline
// paths do not do (Static, Hot and checked handles, race builds, a closed
// heap, the last release), and the misuse they catch.
//
// # Release past zero
//
// A release that takes the count below 0 panics with "offheap:
// Shared.Release past zero". The last release stores countDead (-2^62) in the
// count before it frees, and the Free writes the heap's double-free key
// there, as hugely negative, so the common misuse, releasing
// a copy once too often right after the final release, finds a hugely
// negative count and panics (and a Retain after it panics too). Fast heaps
// never unmap or protect a freed block before Close (its pages are at worst
// given back and come back zero, and a count of 0 panics too), so the read
// is safe. Retain and Release read the count before they add (dead), and
// write nothing to a released handle's block, whose pages the page heap may
// count clean; unkey puts the key back after an add that raced with the
// last release. The block's first word, the free-list link, is never
// touched. The limits: once the block is reused by
// another Alloc the stale release decrements someone else's memory (no
// refcount can tell), and a Hot handle's surplus releases while it is in
// per-P mode are only seen when the owner seals (on a checked heap, when
// they are made: checked_shared.go). Checked heaps (and heaps
// that sample guard pages) keep every live handle in the registry and check
// it before touching memory, so a stale Release panics without reading the
// freed block, naming the allocation site (h.allocStack) — until the address
// is reused by another NewShared.

import (
	"fmt"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pin"
)

// retainSlow is Retain for Static, Hot, checked and zero handles, for a
// closed heap, and for a plain handle whose add found the count at 0 or
// below.
func (s Shared) retainSlow() Shared {
	switch {
	case s.h == nil: // Static or zero
		return s
	case s.plain():
		if s.h.closed.Load() {
			panic(sharedClosedError("Retain"))
		}
		s.unkey(1)
		s.panicRetain() // the heap is open, so Retain made the add
	case s.meta&(flagHot|flagChecked) == flagHot:
		s.panicRetain() // Retain's hotAdd found the count at 0 or below
	}
	// A checked heap's handle: its registry entry says whether it lives.
	if !s.h.enter() {
		panic(sharedClosedError("Retain"))
	}
	defer s.h.exit()
	if !s.live() {
		s.panicRetain()
	}
	if s.meta&flagHot == 0 || s.checkedHot() {
		if dead(atomic.LoadInt64(s.count())) || atomic.AddInt64(s.count(), 1) <= 1 {
			s.panicRetain()
		}
		s.meta &^= flagOwner
		return s
	}
	if v, central := s.hotAdd(1, "Retain"); central && v <= 1 {
		s.panicRetain()
	}
	s.meta &^= flagOwner
	return s
}

// releaseSlow is Release for Static, Hot, checked and zero handles, for
// every handle in race-detector builds, for a closed heap, and for a plain
// handle whose add took the count to 0 or below. The last release runs the
// callback and frees after drop has returned, outside the heap's enter and
// exit: the callback may do anything, Close included.
func (s Shared) releaseSlow() {
	if s.h == nil { // Static or zero
		return
	}
	s.finish(s.drop())
}

// finish does what the last release does after the count: runs the
// callback f, if any, and frees; nothing if this was not the last.
func (s Shared) finish(f func([]byte), last bool) {
	switch {
	case !last:
	case f == nil:
		s.free()
	default:
		runOnRelease(sharedPending{s, f})
	}
}

// drop is releaseSlow's work on the count: it reports whether this release
// was the last, and the callback to run then. Every access to the handle's
// memory is pinned with the heap seen open, or between enter and exit.
func (s Shared) drop() (f func([]byte), last bool) {
	switch {
	case s.plain() && !raceOn:
		// Release made the add if the heap was open (load panics if it is
		// not), and took the count to 0 or below. Its result is not passed
		// down (that would cost Release a register or two): reread it. No
		// correct program changes a count that reached 0, so this is the
		// add's result unless a misuse races with the last release.
		return s.atZero(s.load())
	case s.meta&(flagHot|flagChecked|flagOwner) == flagHot:
		// A retained reference of a Hot handle of a fast heap, in race
		// builds (Release takes it otherwise): hotAdd guards its own
		// access.
		raceRelease(s.data)
		if v, central := s.hotAdd(-1, "Release"); central && v <= 0 {
			return s.atZero(v)
		}
		return nil, false
	}
	if !s.h.enter() {
		panic(sharedClosedError("Release"))
	}
	defer s.h.exit()
	if s.meta&flagChecked != 0 && !s.live() {
		s.panicPastZero()
	}
	if raceOn {
		raceRelease(s.data)
	}
	var v int64
	switch {
	case s.meta&flagOwner != 0:
		return s.seal()
	case s.checkedHot():
		v = s.releaseCheckedHot()
	case s.meta&flagHot != 0:
		var central bool
		if v, central = s.hotAdd(-1, "Release"); !central {
			return nil, false
		}
	default:
		if v = atomic.LoadInt64(s.count()); dead(v) {
			s.panicPastZero()
		}
		v = atomic.AddInt64(s.count(), -1)
	}
	if v <= 0 {
		return s.atZero(v)
	}
	return nil, false
}

// load reads the count, pinned with the heap seen open; it
// panics on a closed heap.
func (s Shared) load() int64 {
	pin.Pin()
	if s.h.closed.Load() {
		pin.Unpin()
		panic(sharedClosedError("Release"))
	}
	v := atomic.LoadInt64(s.count())
	pin.Unpin()
	return v
}

// unkey undoes the add of d that a Retain or Release of a freed plain
// handle made on its count word, which held the heap's double-free key,
// so that the block stays marked free; the caller then
// panics. Pinned with the heap seen open.
func (s Shared) unkey(d int64) {
	pin.Pin()
	if !s.h.closed.Load() {
		atomic.CompareAndSwapInt64(s.count(), int64(s.h.key)+d, int64(s.h.key))
	}
	pin.Unpin()
}

// atZero handles a release that took the count to v <= 0: the last one,
// whose caller runs the callback it returns (if any) and frees.
func (s Shared) atZero(v int64) (f func([]byte), last bool) {
	if v < 0 {
		if v == int64(s.h.key)-1 {
			s.unkey(-1) // a Release of a freed handle
		}
		s.panicPastZero()
	}
	// Pinned with the heap seen open.
	pin.Pin()
	if s.h.closed.Load() {
		pin.Unpin()
		panic(sharedClosedError("Release"))
	}
	atomic.StoreInt64(s.count(), countDead)
	pin.Unpin()
	if raceOn {
		raceAcquire(s.data)
	}
	if s.meta&flagRec != 0 {
		if r, ok := sharedRecs.LoadAndDelete(s.block()); ok {
			f = r.(*sharedRec).onRelease
		}
	}
	return f, true
}

// free gives the block back to the heap; Free needs only its start. It
// clears the block's mark first (sharedBlock), and not before: through the
// OnRelease callback, which runs before it, a Free of the bytes is told
// that they are a Shared's. Pinned with the heap seen open, since the
// callback may have closed it; Free then panics.
func (s Shared) free() {
	pin.Pin()
	if !s.h.closed.Load() {
		*word(s.block()) = 0
	}
	pin.Unpin()
	s.h.Free(bytesAt(s.block(), sharedHdr))
}

func (s Shared) panicRetain() {
	what, block := s.describe()
	panic(fmt.Sprintf("offheap: Shared.Retain of a released handle: %s was already released for the last time%s",
		what, s.h.allocSite(block)))
}

func (s Shared) panicPastZero() {
	what, block := s.describe()
	panic(fmt.Sprintf("offheap: Shared.Release past zero: %s was released more times than it was retained%s",
		what, s.h.allocSite(block)))
}

// allocSite is "; allocated at:\n<stack>" on a heap that knows where the
// block was allocated (checked mode), else "".
func (h *Heap) allocSite(block uintptr) string {
	if st := h.allocStack(block); st != "" {
		return "; allocated at:\n" + st
	}
	return ""
}
