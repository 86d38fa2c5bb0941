package offheap

// Hot handles of Shared: per-P counting, in the manner of Linux's
// percpu_ref.
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
// catches a fold that loses one slot (a test's seal, export_test.go).
//
// Race-detector builds: the count is Go memory there, and
// the detector sees its atomics order every Release before the last one's
// OnLastRelease and Free; the slow paths also make that edge explicitly
// (raceRelease on each Release, raceAcquire at zero: shared_slow.go,
// race.go).

import (
	"sync/atomic"

	"github.com/offheap/offheap/internal/pin"
)

// hotArea is the address of a Hot handle's mode line: the first 64-byte
// boundary after the data. The slots follow, one line each.
func (s Shared) hotArea() uintptr {
	return (uintptr(s.data) + uintptr(s.meta&sharedLenMask) + hotLine - 1) &^ (hotLine - 1)
}

func modeAt(a uintptr) *uint32 { return (*uint32)(ptr(a)) }

func (s Shared) nslots(a uintptr) int { return int(*(*uint32)(ptr(a + 4))) }

func slotAt(a uintptr, i int) *int64 { return (*int64)(ptr(a + hotLine*uintptr(1+i))) }

// hotAdd adds d to a Hot handle's count: to the current P's slot while the
// slots are live, else to the count. It returns the count's new value and
// true when it added to the count. It works pinned, having seen the heap
// open, so that Close cannot unmap the handle under it; on a
// closed heap it panics, naming call.
func (s Shared) hotAdd(d int64, call string) (int64, bool) {
	a := s.hotArea()
	pid := pin.Pin()
	if s.h.closed.Load() {
		pin.Unpin()
		panic(sharedClosedError(call))
	}
	if v := atomic.LoadInt64(s.count()); dead(v) {
		pin.Unpin()
		return v + d, true // as though added: the caller panics
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
	if v := atomic.LoadInt64(s.count()); dead(v) {
		return s.atZero(v - 1) // released already: past zero, written never
	}
	a := s.hotArea()
	if !atomic.CompareAndSwapUint32(modeAt(a), hotPerP, hotSealed) {
		// Already sealed: the owner's value was released twice. Checked
		// mode says so; fast mode counts it as a plain release, so that the
		// surplus is seen below zero.
		if s.checkedHot() {
			s.overRelease("the creator's reference (the value NewShared returned) was released twice")
		}
		if v := atomic.AddInt64(s.count(), -1); v <= 0 {
			return s.atZero(v)
		}
		return nil, false
	}
	var sum int64
	for i := range s.nslots(a) {
		sum += atomic.SwapInt64(slotAt(a, i), slotSealed)
	}
	return s.sealed(sum)
}

// sealed is the seal's last step: the slots' sum comes into the count, and
// the bias and the owner's reference go out, in one add. It reports, as
// drop, whether that was the last release.
func (s Shared) sealed(sum int64) (f func([]byte), last bool) {
	if v := atomic.AddInt64(s.count(), sum-hotBias-1); v <= 0 {
		return s.atZero(v)
	}
	return nil, false
}
