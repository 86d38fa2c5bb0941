package cache

// The index: each shard's open-addressing hash table of 8-byte slots with
// linear probing, held in one heap block. A slot packs the entry's address
// with a tag from the key's hash and the entry's policy bits:
//
//	bits 0-44   the entry's address >> 3 (blocks are 8-aligned; 48-bit addresses)
//	bits 45-46  the frequency counter of the eviction policy (policy.go)
//	bit  47     the entry is on probation (probation.go)
//	bits 48-63  16 bits of the key's hash: a probe compares the key only where the tag matches
//
// Slot 0 is empty and slot 1 is a tombstone (a deleted entry: address 8 is
// never a block). A table has a power-of-two length, holds live plus
// tombstone slots below three quarters of it, and is rebuilt (grown,
// shrunk or cleared of tombstones) from the keys when it crosses that or
// when its live slots fall below an eighth of it.

import (
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap"
)

const (
	slotEmpty = 0
	slotTomb  = 1
	addrBits  = 45
	addrMask  = 1<<addrBits - 1
	freqShift = 45
	freqMax   = 3
	probBit   = 1 << 47 // the entry is on probation (probation.go)
	tagShift  = 48
	minTable  = 16
)

func tagOf(h uint64) uint64 { return h >> tagShift }

// homeOf is the start of h's probe sequence before masking: bits 20 and up,
// clear of the shard's low bits and, below 2^28 slots, of the tag.
func homeOf(h uint64) uint64 { return h >> 20 }

func slotOf(h uint64, e entry) uint64 { return tagOf(h)<<tagShift | addrField(uintptr(e)) }

// addrField is the slot's address bits for a block at a. Heaps map below
// 2^48 (the user address space of 4-level page tables on amd64 and of
// arm64's 48-bit VA): a block above it cannot be indexed.
func addrField(a uintptr) uint64 {
	if uint64(a) >= 1<<(addrBits+3) {
		panic("offheap: cache: a heap block above 2^48 cannot be indexed: the cache needs a heap mapped below 2^48")
	}
	return uint64(a) >> 3
}
func slotEntry(s uint64) entry { return entry(uintptr(s&addrMask) << 3) }
func slotFreq(s uint64) uint64 { return s >> freqShift & freqMax }
func slotLive(s uint64) bool   { return s > slotTomb }

// table is a shard's index; its slots are heap memory, its header Go memory
// inside the shard.
type table struct {
	slots []uint64 // a heap block; nil once the cache is closed
	mask  uint64   // len(slots) - 1
	min   int      // the shortest length the table is rebuilt to
	live  int      // slots holding an entry
	used  int      // live plus tombstones
}

func (t *table) bytes() int64 { return int64(len(t.slots)) * 8 }

func allocSlots(h *offheap.Heap, n int) ([]uint64, error) {
	b, err := h.TryAlloc(n * 8)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*uint64)(ptr(addrOf(b))), n), nil
}

func freeSlots(h *offheap.Heap, s []uint64) {
	if s != nil {
		h.Free(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*8))
	}
}

// find returns the slot holding k, or, if none does, the first free slot
// (empty or tombstone) of k's probe sequence, with found false. It runs under
// the shard's lock, for reading or writing.
func (t *table) find(h uint64, k []byte) (i uint64, found bool) {
	tag := tagOf(h)
	free := ^uint64(0)
	for i = homeOf(h) & t.mask; ; i = (i + 1) & t.mask {
		s := atomic.LoadUint64(&t.slots[i]) // readers may set policy bits meanwhile
		switch {
		case s == slotEmpty:
			if free != ^uint64(0) {
				return free, false
			}
			return i, false
		case s == slotTomb:
			if free == ^uint64(0) {
				free = i
			}
		case s>>tagShift == tag && slotEntry(s).keyIs(k):
			return i, true
		}
	}
}

// put stores slot value s at free slot i.
func (t *table) put(i, s uint64) {
	if t.slots[i] == slotEmpty {
		t.used++
	}
	t.slots[i] = s
	t.live++
}

// remove turns live slot i into a tombstone (or an empty slot where the
// next slot is empty, which ends no probe sequence).
func (t *table) remove(i uint64) {
	t.live--
	if t.slots[(i+1)&t.mask] == slotEmpty {
		t.slots[i] = slotEmpty
		t.used--
		return
	}
	t.slots[i] = slotTomb
}

// full reports whether one more insert would take the table past three
// quarters used, so it must be rebuilt first.
func (t *table) full() bool { return (t.used+1)*4 > len(t.slots)*3 }

// sparse reports whether the table is eight times longer than its live
// slots need, and worth shrinking.
func (t *table) sparse() bool { return len(t.slots) > t.min && t.live*8 < len(t.slots) }

// tableLen is the length of t for n live slots: at most half used, and at
// least t.min.
func (t *table) tableLen(n int) int {
	l := max(t.min, minTable)
	for l < 2*n {
		l *= 2
	}
	return l
}

// rebuild moves the live slots into a new table of tableLen(max(n, live+1))
// slots, rehashing each key with hash. On an allocation failure the table is
// unchanged and the error returned.
func (t *table) rebuild(h *offheap.Heap, hash func([]byte) uint64, n int) error {
	n = t.tableLen(max(n, t.live+1))
	ns, err := allocSlots(h, n)
	if err != nil {
		return err
	}
	nt := table{slots: ns, mask: uint64(n - 1), min: t.min}
	for _, s := range t.slots {
		if slotLive(s) {
			kh := hash(slotEntry(s).key())
			i := homeOf(kh) & nt.mask
			for nt.slots[i] != slotEmpty {
				i = (i + 1) & nt.mask
			}
			nt.put(i, s)
		}
	}
	freeSlots(h, t.slots)
	*t = nt
	return nil
}
