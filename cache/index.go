package cache

// The index: each shard's open-addressing hash table of 8-byte slots with
// linear probing, held in one heap block. A slot packs where the entry's
// record is with a tag from the key's hash and the entry's policy bits:
//
//	bits 0-15   the record's offset in its segment >> 3 (records are 8-aligned; segments at most 512 KiB)
//	bits 16-36  the segment's number in the shard (1 and up)
//	bits 37-38  the frequency counter of the eviction policy
//	bits 48-63  16 bits of the key's hash: a probe compares the key only where the tag matches
//
// Slot 0 is empty and slot 1 is a tombstone (a deleted entry: segment 0 is
// never used, so no location is 0 or 1). A table's length is any multiple
// of 8; a key's probe starts at bits 16-47 of its hash scaled to the length
// (bits 0-15 pick the shard, 48-63 are the tag). A table holds live plus
// tombstone slots below four fifths of its length (two thirds after a rebuild), and is rebuilt (grown,
// shrunk or cleared of tombstones) from the keys when it crosses that or
// when its live slots fall below a quarter of it.

import (
	"sync/atomic"
	"unsafe"

	"github.com/offheap/offheap"
)

const (
	slotEmpty = 0
	slotTomb  = 1
	offBits   = 16
	segBits   = 21
	locBits   = offBits + segBits
	locMask   = 1<<locBits - 1
	maxSegs   = 1<<segBits - 1
	freqShift = locBits
	freqMax   = 3
	tagShift  = 48
	minTable  = 16
)

func tagOf(h uint64) uint64 { return h >> tagShift }

// locOf is the location bits of the record at offset off of segment id.
func locOf(id uint32, off int) uint64 { return uint64(id)<<offBits | uint64(off>>3) }

func slotFreq(s uint64) uint64 { return s >> freqShift & freqMax }
func slotLive(s uint64) bool   { return s > slotTomb }
func slotSeg(s uint64) uint32  { return uint32(s >> offBits & maxSegs) }

// table is a shard's index; its slots are heap memory, its header Go memory
// inside the shard.
type table struct {
	slots []uint64 // a heap block; nil once the cache is closed
	min   int      // the shortest length the table is rebuilt to
	live  int      // slots holding an entry
	used  int      // live plus tombstones
}

func (t *table) bytes() int64 { return int64(len(t.slots)) * 8 }

// home is the first slot of h's probe sequence.
func (t *table) home(h uint64) int { return homeOf(h, len(t.slots)) }

// homeOf is the first slot of h's probe sequence in a table of n slots.
func homeOf(h uint64, n int) int { return int((h >> 16 & 0xffffffff) * uint64(n) >> 32) }

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
// the shard's lock.
func (s *shard) find(h uint64, k []byte) (i int, found bool) {
	t := &s.index
	tag := tagOf(h)
	free := -1
	for i = t.home(h); ; {
		v := atomic.LoadUint64(&t.slots[i]) // readers may set policy bits meanwhile
		switch {
		case v == slotEmpty:
			if free >= 0 {
				return free, false
			}
			return i, false
		case v == slotTomb:
			if free < 0 {
				free = i
			}
		case v>>tagShift == tag && s.entryAt(v).keyIs(k):
			return i, true
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// findLoc returns the slot that points at location loc, whose key hashes
// to h. The record at loc must be live (not flagDead): some slot holds it.
func (s *shard) findLoc(h, loc uint64) int {
	t := &s.index
	for i := t.home(h); ; {
		if v := t.slots[i]; slotLive(v) && v&locMask == loc {
			return i
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// put stores slot value v at free slot i.
func (t *table) put(i int, v uint64) {
	if t.slots[i] == slotEmpty {
		t.used++
	}
	t.slots[i] = v
	t.live++
}

// remove turns live slot i into a tombstone (or an empty slot where the
// next slot is empty, which ends no probe sequence).
func (t *table) remove(i int) {
	t.live--
	j := i + 1
	if j == len(t.slots) {
		j = 0
	}
	if t.slots[j] == slotEmpty {
		t.slots[i] = slotEmpty
		t.used--
		return
	}
	t.slots[i] = slotTomb
}

// full reports whether one more insert would take the table past four
// fifths used, so it must be rebuilt first.
func (t *table) full() bool { return (t.used+1)*5 > len(t.slots)*4 }

// sparse reports whether the table is four times longer than its live
// slots, and worth shrinking: a rebuild leaves it two thirds used, so a
// shrunk table grows again only after its live slots have more than
// doubled.
func (t *table) sparse() bool { return len(t.slots) > t.min && t.live*4 < len(t.slots) }

// tableLen is the length of t for n live slots: about two thirds used, a
// multiple of 8, and at least t.min.
func (t *table) tableLen(n int) int {
	return max(t.min, minTable, (n*3/2+7)&^7)
}

// rebuild moves the live slots into a table of tableLen(max(n, live+1))
// slots, rehashing each key with hash. A table of a new length is a new
// block, and the old one is returned for the caller to free once no
// lock-free reader can hold it; one of the same length is rebuilt in place
// (through a copy in a scratch block), and nil returned. On an allocation
// failure the table is unchanged and the error returned.
func (s *shard) rebuild(h *offheap.Heap, hash func([]byte) uint64, n int) (retired []uint64, err error) {
	t := &s.index
	n = t.tableLen(max(n, t.live+1))
	ns, err := allocSlots(h, n)
	if err != nil {
		return nil, err
	}
	from := t.slots
	if n == len(t.slots) {
		copy(ns, t.slots)
		from, ns = ns, t.slots
		clear(ns)
	}
	nt := table{slots: ns, min: t.min}
	for _, v := range from {
		if slotLive(v) {
			i := nt.home(hash(s.entryAt(v).key()))
			for nt.slots[i] != slotEmpty {
				if i++; i == n {
					i = 0
				}
			}
			nt.put(i, v)
		}
	}
	*t = nt
	if n == len(from) {
		freeSlots(h, from) // the scratch copy
		return nil, nil
	}
	return from, nil
}
