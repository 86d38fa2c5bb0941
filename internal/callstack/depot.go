package callstack

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// The stack depot: every stack recorded, stored once.
//
// A checked heap captures two stacks per block, but a program allocates from
// few call sites, so most stacks repeat. A record keeps a 4-byte ID and
// the depot keeps each distinct stack once, as the sanitizers do: a record is
// 32 bytes where two stacks of 20 PCs would be 360, small enough for a record
// table with one record per 32 bytes of the heap, and the record of a block
// coming back cold from a quarantine costs one miss instead of six. The hash
// and the lookup cost what the misses would, because the walk hashes as it
// goes (BenchmarkCheckedPair64, BenchmarkCheckedLiveK; docs/DESIGN.md).
//
// The depot is process-wide, shared by every heap that records stacks,
// and off-heap: an index of depotSlots slots (a stack's hash and its entry
// number, looked up by open addressing) and an append-only array of
// entries, both mapped once and never unmapped, like the runtime's own
// stack tables. Memory is touched as stacks arrive: the index is 4 MiB of
// address space, the entries 176 bytes per distinct stack. Lookups take
// no lock: a stack that is already known (nearly every one) costs its hash
// and one load. Two stacks are taken to be the same when their 64-bit
// hashes are: with the depot full, the chance that some two of its stacks
// collide is about 2^-30.
//
// When every slot a stack may take is used (more than about depotEntries
// distinct stacks), further new stacks are not recorded: their ID is 0
// and reports show no stack for them.
const (
	depotSlotBits = 18
	depotSlots    = 1 << depotSlotBits
	depotEntries  = depotSlots / 2 // at most half full: short probes
	depotProbes   = 64
)

// ID names a stack in the depot; 0 is no stack.
type ID uint32

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

// InitDepot maps the depot, once. Call it before the first Intern (every
// checked heap, and every profile, does); if the mapping fails, stacks are
// not recorded.
func InitDepot() {
	depot.once.Do(func() {
		s, err := osmem.Map(depotSlots * unsafe.Sizeof(depotSlot{}))
		if err != nil {
			return
		}
		e, err := osmem.Map(depotEntries * unsafe.Sizeof(Stack{}))
		if err != nil {
			osmem.Unmap(s, depotSlots*unsafe.Sizeof(depotSlot{}))
			return
		}
		depot.entries = e
		depot.slots = s
	})
}

// Intern returns the ID of s, whose hash is h (Fill's, or Hash's), adding s
// to the depot if it is new. Capturing must be cheap, since checked mode
// captures a stack on every Alloc and Free: a stack already known (nearly
// every one) costs one load past its hash.
func Intern(s *Stack, h uint64) ID {
	slots := depot.slots
	if s.N <= 0 || slots == nil {
		return 0
	}
	i := uintptr(h >> (64 - depotSlotBits))
	for range depotProbes {
		sl := (*depotSlot)(unsafe.Add(slots, i*unsafe.Sizeof(depotSlot{})))
		switch sh := sl.hash.Load(); {
		case sh == h:
			if id := sl.id.Load(); id-1 < ^uint32(0)-1 { // written, and not 0 or ^0
				return ID(id)
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
func (sl *depotSlot) fill(s *Stack) ID {
	n := depot.next.Add(1)
	if n > depotEntries {
		depot.next.Add(^uint32(0))
		// The slot stays claimed with id 0 forever: this stack is not
		// recorded, and finding it again costs no more than finding it
		// the first time.
		sl.id.Store(^uint32(0))
		return 0
	}
	*entry(ID(n)) = *s
	sl.id.Store(n)
	return ID(n)
}

// waitID returns the slot's stackID once the goroutine that claimed the slot
// has written it: at once, but for a stack first seen by two goroutines at
// the same moment.
func (sl *depotSlot) waitID() ID {
	for {
		switch id := sl.id.Load(); id {
		case 0:
			runtime.Gosched()
		case ^uint32(0):
			return 0
		default:
			return ID(id)
		}
	}
}

// entry is the depot's copy of stack id, which is not 0.
func entry(id ID) *Stack {
	return (*Stack)(unsafe.Add(depot.entries, uintptr(id-1)*unsafe.Sizeof(Stack{})))
}

// Stack is the depot's copy of the stack id names, or nil for 0 and for an
// id the depot never gave. The copy does not change once Intern has
// returned its id.
func (id ID) Stack() *Stack {
	if id == 0 || uint32(id) > depot.next.Load() {
		return nil
	}
	return entry(id)
}

// Format formats the stack id names, as Stack.Format does; "" for 0 and
// for an id the depot never gave.
func (id ID) Format(internal func(fn string) bool) string {
	if s := id.Stack(); s != nil {
		return s.Format(internal)
	}
	return ""
}
