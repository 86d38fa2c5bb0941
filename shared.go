package offheap

// Shared: reference-counted off-heap buffers.
//
// # The handle
//
// A Shared is a 24-byte Go value: a pointer to the first byte of the data, the
// *Heap, and a word that packs the length with a few mode flags. The flags
// live in the value, not in memory, because every handle is a copy of what
// NewShared, Retain or StaticShared returned, so the value always knows its
// mode. The *Heap and the OnLastRelease func are Go pointers and must not be
// stored off-heap (rule 1 of the package): the heap rides in the value, and
// the callback sits in a Go-side registry (sharedRecs), keyed by the block's
// address, for the handles that have one (flagRec).
//
// A heap handle is one block from h.Alloc:
//
//	block+0   word 0: sharedMark^block until the block is freed (its
//	          OnRelease included), so that Free of its bytes can say they
//	          are a Shared's (the allocator's free-list link once freed)
//	block+8   the count (int64, atomic); the double-free key once freed
//	         , which is hugely negative, as countDead
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
// flags (exactly flagHeap set), one load of the heap's closed flag, a load
// of the count (a released handle's count is 0 or below, and nothing is
// written to it: see dead), the add, one test of its result; everything
// else (Static, Hot, checked, zero, the last release, misuse, a closed heap)
// is out of line. Nothing else is read or written, so an uncontended pair
// costs a bare pair of atomic adds (BenchmarkShared/atomic-own) and the
// latency of the two loads, each of which waits for the add before it: the
// price of writing nothing to a released handle's block.
//
// The two are go:nosplit and go:noinline, so that the goroutine cannot be
// preempted between the test of the closed flag and the add: a nosplit
// function has no safe point but its calls, so a stop of the world waits
// for it as for a pinned section, and Close, which marks the heap closed and
// then quiesces before it unmaps, never unmaps the count under
// the add. Pinning would do the same for two calls more (inlined, the
// functions would lose the property).
//
// # Static handles
//
// StaticShared(b) sets flagStatic in the value and keeps h nil. Retain and
// Release test the flag and return: they never load or store memory, so b may
// be read-only (TestSharedStaticReadOnly runs them over a PROT_READ page).
//
// # Unsafe
//
// The handle keeps the data pointer as an unsafe.Pointer (for Static, into
// the caller's slice, which it keeps alive). The count, mode and slot words
// are reached from it by address arithmetic (count, hotArea, slotAt, and the
// inline copies of count in Retain and Release), only for heap handles, whose
// data is off-heap memory that the collector neither scans nor moves; ptr and
// bytesAt turn the block's addresses back into pointers. Every
// word touched is inside the block h.Alloc returned for the handle.

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/pin"
)

// SharedOption configures NewShared: Hot or OnLastRelease.
type SharedOption struct {
	hot       bool
	onRelease func(b []byte)
}

// Hot makes a handle count its references per P while the creator's
// reference (the value NewShared returned) lives, so that every core can
// retain and release it at once without sharing a cache line; it costs 64
// bytes per P. Release the creator's value exactly once, not a retained copy
// in its place (a checked heap reports that as OverRelease).
func Hot() SharedOption { return SharedOption{hot: true} }

// OnLastRelease sets a function that runs once, after the last Release and
// before the memory is freed, with the handle's bytes, outside every lock of
// this package: it may allocate, free and release. If f panics, the memory
// is still freed and Release panics again. Do not Close the heap from f.
func OnLastRelease(f func(b []byte)) SharedOption { return SharedOption{onRelease: f} }

// NewShared allocates a handle to n zeroed bytes with a count of 1, with the
// options Hot and OnLastRelease. It panics as Alloc does when the heap
// cannot allocate; after the heap's Close, every method of the handle panics
// with an error wrapping ErrClosed.
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
	block := addrOf(h.allocShared(size)) // zeroed: the slots are 0, the mode perP
	s := Shared{data: ptr(block + sharedHdr), h: h, meta: uint64(n) | flagHeap}
	// Written pinned with the heap seen open: a racing Close may have
	// unmapped the block since Alloc returned.
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
	checked := h.hasChecker()
	if checked {
		s.meta |= flagChecked
	}
	if onRelease != nil || checked {
		s.meta |= flagRec
		sharedRecs.Store(block, &sharedRec{onRelease: onRelease, n: n, heap: h.key})
	}
	return s
}

// StaticShared returns an immortal handle to b: Retain and Release never
// touch memory, so b may be read-only, and Bytes returns b. b must stay
// valid and unchanged while handles to it are in use.
func StaticShared(b []byte) Shared {
	p := unsafe.Pointer(unsafe.SliceData(b))
	if p == nil {
		p = unsafe.Pointer(&staticEmpty)
	}
	if uint64(len(b)) > sharedLenMask {
		panic(fmt.Sprintf("offheap: StaticShared of %d bytes: too long", len(b)))
	}
	return Shared{data: p, meta: uint64(len(b)) | flagStatic}
}

// TryNewShared is NewShared returning the error instead of panicking:
// errors.Is(err, ErrLimit) past Options.Limit, ErrAddressSpace when the
// heap's address space cannot grow, ErrClosed after the heap's Close,
// ErrSize for a negative n or one no heap can hold, or a wrapped
// syscall.Errno when the system refuses memory.
func (h *Heap) TryNewShared(n int, opts ...SharedOption) (s Shared, err error) {
	if n < 0 || n > maxAlloc {
		return Shared{}, fmt.Errorf("%w: TryNewShared(%d)", ErrSize, n)
	}
	// NewShared panics with an allocation error before it changes anything
	// (allocShared, or the heap seen closed).
	defer recoverAllocError(&err)
	return h.NewShared(n, opts...), nil
}

// ReleaseShared releases every element of s and sets it to the zero Shared, so
// that releasing the slice again is harmless. Zero elements are skipped.
func ReleaseShared(s []Shared) {
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
		// handles. The load first: a released handle's block is written
		// never (see dead).
		c := (*int64)(unsafe.Add(s.data, -8))
		if !s.h.closed.Load() && atomic.LoadInt64(c) > 0 && atomic.AddInt64(c, 1) > 1 {
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
// OnLastRelease function and frees the memory; the bytes must not be used
// afterwards through any copy. Releasing more than was retained panics
// ("offheap: Shared.Release past zero"), reliably when the extra Release
// comes before the block is allocated again.
//
//go:nosplit
//go:noinline
func (s Shared) Release() {
	switch s.meta & (sharedKinds | flagOwner) {
	case flagHeap:
		// Not preemptible from the closed test to the add: see Plain
		// handles. The load first: a released handle's block is written
		// never (see dead).
		if !raceOn && !s.h.closed.Load() {
			c := (*int64)(unsafe.Add(s.data, -8))
			if atomic.LoadInt64(c) <= 0 {
				s.panicPastZero()
			}
			if atomic.AddInt64(c, -1) > 0 {
				return
			}
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
// runs meanwhile. It is math.MaxInt for a static handle and 0 for the zero
// Shared.
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
