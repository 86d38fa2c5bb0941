package offheap

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// The stack depot: every stack a checked heap records, stored once.
//
// A checked heap captures two stacks per block, but a program allocates from
// few call sites, so most stacks repeat. A record keeps a 4-byte stackID and
// the depot keeps each distinct stack once, as the sanitizers do: a record is
// 32 bytes where two stacks of 20 PCs would be 360, small enough for a record
// table with one record per 32 bytes of the heap, and the record of a block
// coming back cold from a quarantine costs one miss instead of six. The hash
// and the lookup cost what the misses would, because the walk hashes as it
// goes (BenchmarkCheckedPair64, BenchmarkCheckedLiveK; docs/DESIGN.md).
//
// The depot is process-wide, shared by every checked heap, and off-heap:
// an index of depotSlots slots (a stack's hash and its entry number, looked
// up by open addressing) and an append-only array of entries, both mapped
// once and never unmapped, like the runtime's own stack tables. Memory is
// touched as stacks arrive: the index is 4 MiB of address space, the entries
// 176 bytes per distinct stack. Lookups take no lock: a stack that is
// already known (nearly every one) costs its hash and one load. Two stacks
// are taken to be the same when their 64-bit hashes are: with the depot
// full, the chance that some two of its stacks collide is about 2^-30.
//
// When every slot a stack may take is used (more than about depotEntries
// distinct stacks), further new stacks are not recorded: their stackID is 0
// and reports show no stack for them.
const (
	depotSlotBits = 18
	depotSlots    = 1 << depotSlotBits
	depotEntries  = depotSlots / 2 // at most half full: short probes
	depotProbes   = 64
)

// stackID names a stack in the depot; 0 is no stack.
type stackID uint32

// depotSlot is one slot of the depot's index.
type depotSlot struct {
	hash atomic.Uint64 // 0: free
	id   atomic.Uint32 // the entry's stackID; 0 while it is being written
	_    uint32
}

var depot struct {
	once    sync.Once
	slots   unsafe.Pointer // depotSlots slots; nil if the mapping failed
	entries unsafe.Pointer // depotEntries stacks
	next    atomic.Uint32  // entries used
}

// initDepot maps the depot, once. Every checked heap calls it before it
// records a stack; if the mapping fails, stacks are not recorded.
func initDepot() {
	depot.once.Do(func() {
		s, err := osmem.Map(depotSlots * unsafe.Sizeof(depotSlot{}))
		if err != nil {
			return
		}
		e, err := osmem.Map(depotEntries * unsafe.Sizeof(stack{}))
		if err != nil {
			osmem.Unmap(s, depotSlots*unsafe.Sizeof(depotSlot{}))
			return
		}
		depot.entries = e
		depot.slots = s
	})
}

// Stacks are captured on every checked Alloc and Free, so capturing must be
// cheap: allocSlow and freeSlow, in their own frames, call fpStack, which
// walks frame pointers where the architecture allows, and
// fill, which falls back on runtime.Callers elsewhere, and intern the stack
// here. The heap's own frames at the top are dropped when a stack is
// printed (internalFrame).

// fill completes s with what fpStack, called by fill's caller, found: n
// PCs, whose hash h it returns. Where frame pointers are not walked
// (framePointers is false) it takes the same frames from runtime.Callers
// instead.
func (s *stack) fill(n int, h uint64) uint64 {
	if !framePointers {
		return s.callers(4) // Callers, callers, fill, its caller
	}
	s.n = int32(n)
	return h
}

// callers fills s from runtime.Callers with the frames fpStack would have
// walked, skipping skip frames (runtime.Callers itself and callers are two;
// an inlined frame counts), and returns their hash.
func (s *stack) callers(skip int) uint64 {
	s.n = int32(runtime.Callers(skip, s.pcs[:]))
	return s.hash()
}

// hash is s's 64-bit hash, never 0.
func (s *stack) hash() uint64 {
	var h uint64
	for _, pc := range s.frames() {
		h = hashPC(h, pc)
	}
	return hashEnd(h, len(s.frames()))
}

// hashPC folds the next PC of a stack into its hash h.
func hashPC(h uint64, pc uintptr) uint64 { return (h ^ uint64(pc)) * 0xff51afd7ed558ccd }

// hashEnd finishes the hash h of a stack of n PCs: never 0.
func hashEnd(h uint64, n int) uint64 {
	h = (h ^ uint64(n)) * 0x9e3779b97f4a7c15
	return h ^ h>>32 | 1
}

// intern returns the stackID of s, whose hash is h, adding s to the depot
// if it is new.
func intern(s *stack, h uint64) stackID {
	slots := depot.slots
	if s.n <= 0 || slots == nil {
		return 0
	}
	i := uintptr(h >> (64 - depotSlotBits))
	for range depotProbes {
		sl := (*depotSlot)(unsafe.Add(slots, i*unsafe.Sizeof(depotSlot{})))
		switch sh := sl.hash.Load(); {
		case sh == h:
			if id := sl.id.Load(); id-1 < ^uint32(0)-1 { // written, and not 0 or ^0
				return stackID(id)
			}
			return sl.waitID()
		case sh == 0:
			if sl.hash.CompareAndSwap(0, h) {
				return sl.fill(s)
			}
			if sl.hash.Load() == h { // another goroutine is adding the same stack
				return sl.waitID()
			}
		}
		i = (i + 1) & (depotSlots - 1)
	}
	return 0
}

// fill stores s as the entry of the slot it has just claimed.
func (sl *depotSlot) fill(s *stack) stackID {
	n := depot.next.Add(1)
	if n > depotEntries {
		depot.next.Add(^uint32(0))
		// The slot stays claimed with id 0 forever: this stack is not
		// recorded, and finding it again costs no more than finding it
		// the first time.
		sl.id.Store(^uint32(0))
		return 0
	}
	*stackEntry(stackID(n)) = *s
	sl.id.Store(n)
	return stackID(n)
}

// waitID returns the slot's stackID once the goroutine that claimed the slot
// has written it: at once, but for a stack first seen by two goroutines at
// the same moment.
func (sl *depotSlot) waitID() stackID {
	for {
		switch id := sl.id.Load(); id {
		case 0:
			runtime.Gosched()
		case ^uint32(0):
			return 0
		default:
			return stackID(id)
		}
	}
}

// stackEntry is the depot's copy of stack id, which is not 0.
func stackEntry(id stackID) *stack {
	return (*stack)(unsafe.Add(depot.entries, uintptr(id-1)*unsafe.Sizeof(stack{})))
}

// String formats the stack id names, as stack.String does; "" for 0.
func (id stackID) String() string {
	if id == 0 || uint32(id) > depot.next.Load() {
		return ""
	}
	return stackEntry(id).String()
}
