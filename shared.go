package offheap

// Shared: reference-counted off-heap buffers.
//
// # The handle
//
// A Shared is a 24-byte Go value: a pointer to the first byte of the data, the
// *Heap, and a word that packs the length with a few mode flags. The flags
// live in the value, not in memory, because every handle is a copy of what
// NewShared, Retain or Static returned, so the value always knows its mode.
// The *Heap and the OnRelease func are Go pointers and must not be stored
// off-heap (rule 1 of the package): the heap rides in the value, and the
// callback sits in a Go-side registry (sharedRecs), keyed by the block's
// address, for the handles that have one (flagRec).
//
// A heap handle is one block from h.Alloc:
//
//	block+0   word 0: sharedMark^block while the handle lives, so that Free
//	          of its bytes can say they are a Shared's (the allocator's
//	          free-list link once freed)
//	block+8   the count (int64, atomic); the double-free key once freed
//	          (doublefree.go), which is hugely negative, as countDead
//	block+16  the n bytes of data: Bytes
//	[Hot only, from the first 64-byte boundary after the data]
//	area+0    mode (uint32: perP or sealed), area+4: slot count (uint32)
//	area+64   slot 0 (int64), each slot alone on its 64-byte line
//	...       slot nslots-1
//
// # Plain handles
//
// Retain is one atomic add of +1 on the count, Release one of -1; the Release
// that takes it to 0 frees. Both are short calls: one test of the value's
// flags (exactly flagHeap set), one load of the heap's closed flag, the add,
// one test of its result; everything else (Static, Hot, checked, zero, the
// last release, misuse, a closed heap) is out of line. Nothing else is read
// or written, so an uncontended pair costs about a bare pair of atomic adds
// (BenchmarkShared/own vs BenchmarkShared/atomic-own).
//
// The two are go:nosplit and go:noinline, so that the goroutine cannot be
// preempted between the test of the closed flag and the add: a nosplit
// function has no safe point but its calls, so a stop of the world waits
// for it as for a pinned section, and Close, which marks the heap closed and
// then quiesces before it unmaps (closing.go), never unmaps the count under
// the add. Pinning would do the same for two calls more (inlined, the
// functions would lose the property).
//
// # Static handles
//
// Static(b) sets flagStatic in the value and keeps h nil. Retain and Release
// test the flag and return: they never load or store memory, so b may be
// read-only (TestSharedStaticReadOnly runs them over a PROT_READ page).
//
// # Hot handles: per-P counting, in the manner of Linux's percpu_ref
//
// A handle every core retains at once bounces one cache line between the
// cores on every plain Retain and Release. A Hot handle has a slot per P
// (sized runtime.GOMAXPROCS at creation, capped at maxHotSlots), each on its
// own cache line, and a mode word. Its count starts at hotBias+1: the
// creator's reference plus a bias that keeps the count far from zero while
// the slots hold part of the total.
//
// While the mode is perP, Retain and Release add ±1 to the slot of the P they
// run on (pinned, so it is nearly always a line no other core writes). A P id
// at or beyond the slot count (GOMAXPROCS was raised after creation) adds to
// the count instead; so does everything once the mode is sealed. The value
// NewShared returned carries flagOwner; Retain returns values without it. The
// owner's Release seals: it CASes the mode to sealed (exactly one sealer:
// a second owner Release fails the CAS and is counted as a plain release),
// then swaps every slot to slotSealed, summing the old values, and finally
// adds sum - hotBias - 1 to the count: the slots' share comes in, the bias
// and the owner's reference go out. Whoever takes the count to 0 frees.
//
// Correctness. Define the live total T = count + (sum of the slots not yet
// swapped) + (the sealer's partial sum of swapped slots, until its final
// add). Every Retain and Release changes T by exactly its ±1 at exactly one
// atomic instruction:
//
//   - a slot add that lands before the swap of that slot is in the slot's
//     value, which the swap moves into the partial sum: counted once;
//   - a slot add that lands after the swap finds the slot at slotSealed +
//     small, far below slotSealedBelow (real slot values stay within
//     ±2^61, sealed ones within 2^61 of -2^62). Its add is lost with the
//     slot, which no one reads again, so the operation redoes it on the
//     count: counted once. This is the crux: an operation that read "perP"
//     before the seal may still add to its slot after the swap, and the
//     sentinel turns that late add into a detectable miss instead of a lost
//     count. The swap is atomic, so no add falls between the read of a
//     slot's value and the sentinel's store;
//   - a count add is counted at once.
//
// So after the sealer's final add, count = T = the references really held.
// Before it, the count carries hotBias (2^62), which no sequence of real
// operations comes near to cancelling, so no release can see 0 while the
// slots or the sealer's partial sum still hold references: the block is never
// freed early. After it, the count is an ordinary refcount: it reaches 0 once,
// when the last reference is released, and that atomic add's caller alone
// frees. Hence the block is freed exactly once, after the last Release,
// whether the owner releases first, last or in the middle.
// TestSharedHotStress checks this with an outstanding-reference counter of
// its own, and TestSharedHotStressCatchesBrokenFold checks that the test
// catches a fold that loses one slot (sharedBrokenFold).
//
// Race-detector builds: the count is Go memory there (region_race.go), and
// the detector sees its atomics order every Release before the last one's
// OnRelease and Free; drop and atZero also make that edge explicitly
// (raceRelease on each Release, raceAcquire at zero: race.go).
//
// # Releases outside every lock, without recursion
//
// The last Release frees with h.Free and, before that, runs the OnRelease
// callback; no lock of this package is held at either point (the registry
// entry is removed first). A callback may release other handles whose
// callbacks release more: a tree. To run a tree of any depth without
// recursion, each goroutine that runs a callback registers itself as a
// drainer (sharedDrainers); a final release whose goroutine is already
// draining (the release is inside a callback further up its own stack) pushes
// the work on that drainer's pending list and returns, and the drainer runs
// the list in a loop. So the stack holds at most one callback at a time,
// whatever the depth of the tree. Work is never handed to another goroutine:
// a callback runs on the goroutine of the Release that took the count to 0,
// after that Release's own callback chain. Go has no goroutine-local storage,
// so a drainer locks its goroutine to its OS thread while it drains and is
// keyed by the thread id (gettid, a fast system call): a release on that
// thread can only come from that goroutine. The lookup is made only by final
// releases of handles with a callback, and only while some goroutine drains.
// (Without Linux, the key is the goroutine id parsed from runtime.Stack,
// which costs microseconds; no heap exists there today.)
//
// # Release past zero
//
// A release that takes the count below 0 panics with "offheap:
// Shared.Release past zero". The last release stores countDead (-2^62) in the
// count before it frees, and the Free writes the heap's double-free key
// there, as hugely negative (doublefree.go), so the common misuse, releasing
// a copy once too often right after the final release, finds a hugely
// negative count and panics (and a Retain after it panics too); unkey puts
// the key back first. Fast heaps never unmap or protect a freed block before
// Close (its pages are at worst given back and come back zero, and a count
// of 0 panics too), so the read is safe; the block's first word, the
// free-list link, is never touched. The limits: once the block is reused by
// another Alloc the stale release decrements someone else's memory (no
// refcount can tell), and a Hot handle's surplus releases while it is in
// per-P mode are only seen when the owner seals. Checked heaps (and heaps
// that sample guard pages) keep every live handle in the registry and check
// it before touching memory, so a stale Release panics without reading the
// freed block, naming the allocation site (h.allocStack) — until the address
// is reused by another NewShared.
//
// # Unsafe
//
// The handle keeps the data pointer as an unsafe.Pointer (for Static, into
// the caller's slice, which it keeps alive). The count, mode and slot words
// are reached from it by address arithmetic (count, hotArea, slotAt, and the
// inline copies of count in Retain and Release), only for heap handles, whose
// data is off-heap memory that the collector neither scans nor moves; ptr and
// bytesAt (unsafe.go) turn the block's addresses back into pointers. Every
// word touched is inside the block h.Alloc returned for the handle.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/pin"
)

// Shared is a reference-counted handle to bytes: n off-heap bytes from
// Heap.NewShared, freed after the last Release, or any []byte made immortal
// by Static. It is a small value (three words): copy it freely, but each
// reference must be released once. Retain returns a new reference.
//
// The zero Shared holds nothing and is not a valid handle: Release and
// ReleaseAll ignore it (as Free ignores nil), Retain returns it, Bytes is nil
// and Refs is 0.
//
// Retain and Release are safe for concurrent use. The bytes are not
// synchronized by the count: as with any shared []byte, write them before
// sharing the handle and only read them afterwards.
type Shared struct {
	data unsafe.Pointer // first byte of the data; nil in the zero Shared
	h    *Heap          // the heap that owns the block; nil for Static
	meta uint64         // length (low 48 bits) | flags
}

// SharedOption configures NewShared: Hot or OnRelease.
type SharedOption struct {
	hot       bool
	onRelease func(b []byte)
}

// Hot makes a handle count its references per P: while the creator's
// reference (the value NewShared returned) lives, Retain and Release touch
// only a counter slot of the P they run on, so a handle that every core
// retains and releases at once does not bounce one cache line between them.
// The creator's Release folds the slots into one count that later operations
// use; the memory is freed after the last Release, as for any handle. A Hot
// handle costs 64 bytes per P (runtime.GOMAXPROCS at creation) and its
// Retain and Release cost a little more than a plain handle's when only one
// goroutine uses it.
//
// The creator's reference is the value NewShared returned (or a copy of it),
// not any reference: Retain returns references that do not seal. Release
// the creator's value exactly once; a program that releases a retained
// reference in its place (treating references as interchangeable) never
// seals the handle and leaks it.
func Hot() SharedOption { return SharedOption{hot: true} }

// OnRelease sets a function that runs once, after the last Release and before
// the memory is freed, with the handle's bytes. It runs on the goroutine of
// the last Release, outside every lock of this package, so it may allocate,
// free, and release other handles (whose callbacks run after it returns, in a
// loop, never nested: a chain of any length uses constant stack). If f
// panics, the memory is still freed and every pending callback still runs,
// whatever they do; then the Release panics again with the first panic's
// value. Since the memory is freed after f returns, a program must not
// Close the heap on a signal sent from f: the Close would race the Free.
func OnRelease(f func(b []byte)) SharedOption { return SharedOption{onRelease: f} }

const (
	sharedHdr = 16 // bytes before the data: the free-list word and the count

	sharedLenBits = 48
	sharedLenMask = 1<<sharedLenBits - 1

	flagStatic  = 1 << 56 // immortal: Retain and Release touch nothing
	flagHot     = 1 << 57 // per-P slots after the data
	flagOwner   = 1 << 58 // the creator's reference of a Hot handle: its Release seals
	flagRec     = 1 << 59 // the registry has an entry for the block
	flagChecked = 1 << 60 // checked heap: the registry entry is the liveness check
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

// sharedBrokenFold is a test knob: when set, the fold of a Hot handle forgets
// the first slot that holds a nonzero count, the bug the stress test must
// catch (TestSharedHotStressCatchesBrokenFold).
var sharedBrokenFold bool

// sharedRec is a handle's Go-side state: its callback. In checked heaps every
// live handle has one, and its presence is the liveness check.
type sharedRec struct {
	onRelease func(b []byte)
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

// staticEmpty is where Static(nil) points, so that it is not the zero Shared.
var staticEmpty [1]byte

// NewShared allocates a handle to n zeroed bytes with a count of 1. It panics
// like Alloc when the heap cannot allocate. Options: Hot, OnRelease.
//
// After the heap's Close, every method of a heap handle (Retain, Release,
// Refs, Bytes) panics with an error that wraps ErrClosed.
func (h *Heap) NewShared(n int, opts ...SharedOption) Shared {
	if n < 0 || n > maxAlloc {
		panic(fmt.Sprintf("%v: NewShared(%d)", ErrSize, n))
	}
	var hot bool
	var onRelease func([]byte)
	for _, o := range opts {
		hot = hot || o.hot
		if o.onRelease != nil {
			onRelease = o.onRelease
		}
	}
	size := sharedHdr + n
	nslots := 0
	if hot {
		nslots = min(runtime.GOMAXPROCS(0), maxHotSlots)
		size += hotLine - 1 + hotLine*(1+nslots) // alignment, mode line, slots
	}
	block := addrOf(h.Alloc(size)) // zeroed: the slots are 0, the mode perP
	s := Shared{data: ptr(block + sharedHdr), h: h, meta: uint64(n) | flagHeap}
	// Written pinned with the heap seen open: a racing Close may have
	// unmapped the block since Alloc returned (closing.go).
	pin.Pin()
	if h.closed.Load() {
		pin.Unpin()
		panic(closedError("NewShared"))
	}
	*word(block) = sharedMark ^ block
	if hot {
		s.meta |= flagHot | flagOwner
		a := s.hotArea()
		*(*uint32)(ptr(a + 4)) = uint32(nslots)
		atomic.StoreInt64(s.count(), hotBias+1)
	} else {
		atomic.StoreInt64(s.count(), 1)
	}
	pin.Unpin()
	checked := h.chk != nil
	if checked {
		s.meta |= flagChecked
	}
	if onRelease != nil || checked {
		s.meta |= flagRec
		sharedRecs.Store(block, &sharedRec{onRelease: onRelease})
	}
	return s
}

// Static returns an immortal handle to b: Retain and Release never write (or
// read) memory, so b may be read-only, and Bytes returns b (with its capacity
// cut to its length). b must stay valid and unchanged while handles to it are
// in use; Static(nil) is an empty handle, not the zero Shared.
func Static(b []byte) Shared {
	p := unsafe.Pointer(unsafe.SliceData(b))
	if p == nil {
		p = unsafe.Pointer(&staticEmpty)
	}
	if uint64(len(b)) > sharedLenMask {
		panic(fmt.Sprintf("offheap: Static of %d bytes: too long", len(b)))
	}
	return Shared{data: p, meta: uint64(len(b)) | flagStatic}
}

// ReleaseAll releases every element of s and sets it to the zero Shared, so
// that releasing the slice again is harmless. Zero elements are skipped.
func ReleaseAll(s []Shared) {
	for i := range s {
		x := s[i]
		s[i] = Shared{}
		x.Release()
	}
}

// Retain adds a reference and returns it: release the result once. For a
// Static handle it returns s and writes nothing. Retain panics if s was
// already released for the last time, where that can be told (see Release).
//
//go:nosplit
//go:noinline
func (s Shared) Retain() Shared {
	switch s.meta & sharedKinds {
	case flagHeap:
		// Not preemptible from the closed test to the add: see Plain
		// handles.
		if !s.h.closed.Load() && atomic.AddInt64((*int64)(unsafe.Add(s.data, -8)), 1) > 1 {
			return s
		}
	case flagHeap | flagHot:
		// A Hot handle of a fast heap, one call away as before Retain was
		// a call itself: hotAdd guards its own access.
		if v, central := s.hotAdd(1, "Retain"); !central || v > 1 {
			s.meta &^= flagOwner
			return s
		}
	}
	return s.retainSlow()
}

// Release drops a reference. The last Release of a heap handle runs its
// OnRelease function, then frees the memory; the bytes must not be used
// afterwards through any copy. Release of a Static handle writes nothing.
//
// Releasing more times than the handle was retained panics with a message
// that starts "offheap: Shared.Release past zero" (naming where the handle was
// allocated, on a checked heap). It is caught reliably when the extra Release
// comes before the block is allocated again; on a Hot handle, surplus
// releases made while the creator's reference lives are caught when the
// creator releases.
//
//go:nosplit
//go:noinline
func (s Shared) Release() {
	switch s.meta & (sharedKinds | flagOwner) {
	case flagHeap:
		// Not preemptible from the closed test to the add: see Plain
		// handles.
		if !raceOn && !s.h.closed.Load() && atomic.AddInt64((*int64)(unsafe.Add(s.data, -8)), -1) > 0 {
			return
		}
	case flagHeap | flagHot:
		// A retained reference of a Hot handle of a fast heap, as in Retain.
		if !raceOn {
			if v, central := s.hotAdd(-1, "Release"); central && v <= 0 {
				s.finish(s.atZero(v))
			}
			return
		}
	}
	s.releaseSlow()
}

// Bytes returns the handle's bytes, with len and cap n (nil for the zero
// Shared). They are valid until the last Release.
func (s Shared) Bytes() []byte {
	if s.data == nil {
		return nil
	}
	if s.h != nil && s.h.closed.Load() {
		panic(sharedClosedError("Bytes"))
	}
	return unsafe.Slice((*byte)(s.data), int(s.meta&sharedLenMask))
}

// Refs returns the number of references: exact when no Retain or Release
// runs at the same time, a snapshot otherwise. It is math.MaxInt for a
// Static handle (never the sole owner: its bytes may be read-only), 0 for the
// zero Shared and, where that can be told, for a released handle.
func (s Shared) Refs() int {
	switch {
	case s.meta&flagStatic != 0:
		return math.MaxInt
	case s.h == nil:
		return 0
	case s.meta&flagChecked != 0 && !s.live():
		return 0
	}
	if !s.h.enter() {
		panic(sharedClosedError("Refs"))
	}
	defer s.h.exit()
	c := atomic.LoadInt64(s.count())
	if s.meta&flagHot != 0 {
		a := s.hotArea()
		if atomic.LoadUint32(modeAt(a)) == hotPerP && c > hotBias/2 {
			c -= hotBias
			for i := range s.nslots(a) {
				if v := atomic.LoadInt64(slotAt(a, i)); v > slotSealedBelow {
					c += v
				}
			}
		}
	}
	return int(max(c, 0))
}

// IsZero reports whether s is the zero Shared.
func (s Shared) IsZero() bool { return s.data == nil }

// count is the handle's count word: the 8 bytes before the data.
func (s Shared) count() *int64 { return (*int64)(unsafe.Add(s.data, -8)) }

// block is the address h.Alloc returned for the handle.
func (s Shared) block() uintptr { return uintptr(s.data) - sharedHdr }

// hotArea is the address of a Hot handle's mode line: the first 64-byte
// boundary after the data. The slots follow, one line each.
func (s Shared) hotArea() uintptr {
	return (uintptr(s.data) + uintptr(s.meta&sharedLenMask) + hotLine - 1) &^ (hotLine - 1)
}

func modeAt(a uintptr) *uint32        { return (*uint32)(ptr(a)) }
func (s Shared) nslots(a uintptr) int { return int(*(*uint32)(ptr(a + 4))) }
func slotAt(a uintptr, i int) *int64  { return (*int64)(ptr(a + hotLine*uintptr(1+i))) }
func (s Shared) live() bool           { _, ok := sharedRecs.Load(s.block()); return ok }
func (s Shared) describe() (string, uintptr) {
	return fmt.Sprintf("the %d-byte Shared at %#x", s.meta&sharedLenMask, uintptr(s.data)), s.block()
}

// plain reports whether s takes the inline paths of Retain and Release.
func (s Shared) plain() bool {
	return s.meta&sharedKinds == flagHeap
}

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
	if s.meta&flagHot == 0 {
		if atomic.AddInt64(s.count(), 1) <= 1 {
			s.panicRetain()
		}
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
// exit: the callback may do anything, Close included (closing.go).
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
// memory is pinned with the heap seen open, or between enter and exit
// (closing.go).
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
	case s.meta&flagHot != 0:
		var central bool
		if v, central = s.hotAdd(-1, "Release"); !central {
			return nil, false
		}
	default:
		v = atomic.AddInt64(s.count(), -1)
	}
	if v <= 0 {
		return s.atZero(v)
	}
	return nil, false
}

// load reads the count, pinned with the heap seen open (closing.go); it
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
// handle made on its count word, which held the heap's double-free key
// (doublefree.go), so that the block stays marked free; the caller then
// panics. Pinned with the heap seen open (closing.go).
func (s Shared) unkey(d int64) {
	pin.Pin()
	if !s.h.closed.Load() {
		atomic.CompareAndSwapInt64(s.count(), int64(s.h.key)+d, int64(s.h.key))
	}
	pin.Unpin()
}

// hotAdd adds d to a Hot handle's count: to the current P's slot while the
// slots are live, else to the count. It returns the count's new value and
// true when it added to the count. It works pinned, having seen the heap
// open, so that Close cannot unmap the handle under it (closing.go); on a
// closed heap it panics, naming call.
func (s Shared) hotAdd(d int64, call string) (int64, bool) {
	a := s.hotArea()
	pid := pin.Pin()
	if s.h.closed.Load() {
		pin.Unpin()
		panic(sharedClosedError(call))
	}
	if atomic.LoadUint32(modeAt(a)) == hotPerP {
		n := s.nslots(a)         // written before the handle was shared, never again
		if uint(pid) < uint(n) { // else GOMAXPROCS grew after creation
			if v := atomic.AddInt64(slotAt(a, pid), d); v > slotSealedBelow {
				pin.Unpin()
				return 0, false // counted in a live slot
			}
			// The slot was swapped to slotSealed after we read perP: the
			// fold has taken its value, and our add is lost with it.
			// Count it on the count instead (see the correctness argument).
		}
	}
	v := atomic.AddInt64(s.count(), d)
	pin.Unpin()
	return v, true
}

// seal is the owner's Release of a Hot handle: fold the slots into the count
// and drop the bias and the owner's reference in one add. It reports, as
// drop, whether that was the last release.
func (s Shared) seal() (f func([]byte), last bool) {
	a := s.hotArea()
	if !atomic.CompareAndSwapUint32(modeAt(a), hotPerP, hotSealed) {
		// Already sealed: the owner's value was released twice. Count it as
		// a plain release so that the surplus is seen below zero.
		if v := atomic.AddInt64(s.count(), -1); v <= 0 {
			return s.atZero(v)
		}
		return nil, false
	}
	var sum int64
	skip := sharedBrokenFold
	for i := range s.nslots(a) {
		v := atomic.SwapInt64(slotAt(a, i), slotSealed)
		if skip && v != 0 {
			skip = false // the deliberate bug: this slot's count is lost
			continue
		}
		sum += v
	}
	if v := atomic.AddInt64(s.count(), sum-hotBias-1); v <= 0 {
		return s.atZero(v)
	}
	return nil, false
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
	// Pinned with the heap seen open (closing.go).
	pin.Pin()
	if s.h.closed.Load() {
		pin.Unpin()
		panic(sharedClosedError("Release"))
	}
	atomic.StoreInt64(s.count(), countDead)
	*word(s.block()) = 0 // no longer a live handle's block (sharedBlock)
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

// free gives the block back to the heap. Free needs only its start.
func (s Shared) free() { s.h.Free(bytesAt(s.block(), sharedHdr)) }

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

// A sharedPending is a final release whose callback has yet to run.
type sharedPending struct {
	s Shared
	f func([]byte)
}

// A sharedDrainer is a goroutine that is running callbacks, and the final
// releases its callbacks made, to run after them. Only its goroutine touches
// it.
type sharedDrainer struct {
	pending []sharedPending
}

var (
	sharedDrainers sync.Map     // drainer's thread id (uint64) -> *sharedDrainer
	sharedDraining atomic.Int64 // goroutines draining now: 0 spares the lookup
)

// runOnRelease runs p's callback and frees its block, and does the same for
// every final release the callbacks make, in a loop. If this goroutine is
// already draining (p comes from a callback further up its stack), it queues
// p for that loop instead: the stack never holds two callbacks.
//
// A drainer is found by the id of its OS thread (sharedSelf): it locks its
// goroutine to the thread while it drains, so no other goroutine runs there,
// and a release on that thread is a release from inside one of its
// callbacks. It registers after locking and unregisters before unlocking.
func runOnRelease(p sharedPending) {
	if sharedDraining.Load() != 0 {
		if d, ok := sharedDrainers.Load(sharedSelf()); ok {
			d := d.(*sharedDrainer)
			d.pending = append(d.pending, p)
			return
		}
	}
	runtime.LockOSThread()
	id := sharedSelf()
	if id == 0 { // cannot tell threads apart: run it here, nested
		runtime.UnlockOSThread()
		if r := p.run(); r != nil {
			panic(r)
		}
		return
	}
	d := &sharedDrainer{pending: []sharedPending{p}}
	sharedDrainers.Store(id, d)
	sharedDraining.Add(1)
	defer func() {
		sharedDrainers.Delete(id)
		sharedDraining.Add(-1)
		runtime.UnlockOSThread()
	}()
	if first := d.drain(); first != nil {
		panic(first) // every pending callback has run: now the first panic continues
	}
}

// drain runs the pending callbacks, last queued first, until none is left,
// and returns what the first of them to panic panicked with (nil if none
// did). A panic stops only its own callback: the others all run.
func (d *sharedDrainer) drain() (first any) {
	for len(d.pending) > 0 {
		p := d.pending[len(d.pending)-1]
		d.pending[len(d.pending)-1] = sharedPending{}
		d.pending = d.pending[:len(d.pending)-1]
		if r := p.run(); first == nil {
			first = r
		}
	}
	return first
}

// run calls the callback and frees the block, even if the callback panics,
// and returns what the callback (or else the Free) panicked with, or nil.
func (p sharedPending) run() any {
	r := recovered(func() { p.f(p.s.Bytes()) })
	if err := recovered(p.s.free); r == nil {
		r = err
	}
	return r
}

// recovered calls f and returns what it panicked with, or nil.
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}
