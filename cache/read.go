package cache

// The lock-free read (readers.go says why it is safe): peek finds and
// copies a value with no lock held, reading only through bounds-checked
// offsets; readFast runs it between two loads of the shard's seq.

import (
	"bytes"
	"sync/atomic"
	"unsafe"
)

// readTries is how many times a lock-free read starts over after a write
// to its shard overlapped it, and seqSpins how many loads of an odd seq it
// waits through before that, ahead of taking the lock.
const (
	readTries = 4
	seqSpins  = 64
)

// peekResult is what peek found.
type peekResult uint8

const (
	peekRetry   peekResult = iota // the shard changed under the read: start over
	peekHit                       // found: the value is appended to dst if it was asked for
	peekMiss                      // no entry for the key
	peekExpired                   // the entry's time has passed
	peekExt                       // the value is in a block of its own, at the address peek returns
	peekClosed                    // the cache is closed
)

// readFast runs peek without the lock, between two loads of the shard's
// seq, until it holds or readTries have failed; it returns peekRetry where
// the caller must take the lock and look again. A value in a block of its
// own is copied in a second step, once the first has shown its address and
// length to be the record's (the block may be freed meanwhile, and the
// copy is then discarded as any other: the heap keeps its memory mapped
// until Close, which waits for the reads in flight). value says whether to
// copy the value to dst and mark the entry read (Get), or only to find it
// (Has). A Get's hit counts in the stripe as a read ended and nothing
// else, its miss as a miss; every other outcome as other.
func (c *Cache) readFast(s *shard, h uint64, k, dst []byte, value bool) ([]byte, peekResult) {
	st := c.readers.stripe()
	n := len(dst)
	for range readTries {
		v := s.seq.Load()
		for i := 0; v&1 != 0 && i < seqSpins; i++ {
			v = s.seq.Load()
		}
		if v&1 != 0 {
			break
		}
		st.enters.Add(1) // orders the loads below after it
		if c.closed.Load() {
			st.other.Add(1)
			st.exits.Add(1)
			return dst[:n], peekClosed
		}
		var r peekResult
		var ext, extLen uintptr
		dst, r, ext, extLen = c.peek(s, h, k, dst[:n], value)
		st.exits.Add(1) // orders peek's loads before the load of seq below
		if s.seq.Load() != v || r == peekRetry {
			st.other.Add(1)
			continue
		}
		if r == peekExt {
			st.other.Add(1) // the lookup; the copy below is the hit
			st.enters.Add(1)
			if c.closed.Load() {
				st.other.Add(1)
				st.exits.Add(1)
				return dst[:n], peekClosed
			}
			dst = append(dst[:n], unsafe.Slice((*byte)(ptr(ext)), extLen)...)
			st.exits.Add(1)
			if s.seq.Load() != v {
				st.other.Add(1)
				continue
			}
			return dst, peekHit
		}
		switch {
		case r == peekHit && value:
			return dst, r
		case r == peekMiss && value:
			st.misses.Add(1)
		}
		st.other.Add(1)
		return dst[:n], r
	}
	return dst[:n], peekRetry
}

// peek looks k up in s without its lock and, if value, appends its value
// to dst (or, for a value in a block of its own, returns peekExt with the
// block's address and the value's length) and marks it read. What it
// returns is to be kept only if the shard's seq did not change meanwhile.
func (c *Cache) peek(s *shard, h uint64, k, dst []byte, value bool) ([]byte, peekResult, uintptr, uintptr) {
	tp, sp := s.tab.Load(), s.segView.Load()
	if tp == nil || sp == nil {
		return dst, peekRetry, 0, 0
	}
	slots, segs := *tp, *sp
	size := uintptr(c.segSize)
	tag := tagOf(h)
	i := homeOf(h, len(slots))
	for range len(slots) {
		p := &slots[i]
		v := atomic.LoadUint64(p)
		if v == slotEmpty {
			return dst, peekMiss, 0, 0
		}
		if v != slotTomb && v>>tagShift == tag {
			id := int(slotSeg(v))
			off := uintptr(v&(1<<offBits-1)) << 3
			if id >= len(segs) || off+headerSize > size {
				return dst, peekRetry, 0, 0
			}
			base := atomic.LoadUintptr(&segs[id].addr)
			if base == 0 {
				return dst, peekRetry, 0, 0
			}
			a := base + off
			hdr := *(*uint64)(ptr(a))
			f := uint8(hdr >> 48)
			ko := uintptr(headerSize)
			if f&flagTTL != 0 {
				ko += 8
			}
			if f&flagExt != 0 {
				ko += 8
			}
			if kl := int(hdr >> 32 & 0xffff); kl == len(k) {
				if off+ko+uintptr(kl) > size {
					return dst, peekRetry, 0, 0
				}
				if bytes.Equal(unsafe.Slice((*byte)(ptr(a+ko)), kl), k) {
					return c.peeked(p, v, a, hdr, a+ko+uintptr(kl), size-off-ko-uintptr(kl), dst, value)
				}
			}
		}
		if i++; i == len(slots) {
			i = 0
		}
	}
	return dst, peekRetry, 0, 0
}

// peeked finishes peek on the record at a, whose key matched: hdr is the
// header peek read (read once: the offsets it checked follow from it), the
// value begins at val with room bytes left in its segment (or, in a block
// of its own, at the address stored before the key), and p is the slot,
// which held v.
func (c *Cache) peeked(p *uint64, v uint64, a uintptr, hdr uint64, val, room uintptr, dst []byte, value bool) ([]byte, peekResult, uintptr, uintptr) {
	f := uint8(hdr >> 48)
	switch {
	case f&flagDead != 0:
		return dst, peekRetry, 0, 0
	case f&flagTTL != 0 && *(*int64)(ptr(a + headerSize)) <= c.now():
		return dst, peekExpired, 0, 0
	case !value:
		return dst, peekHit, 0, 0
	}
	vl := uintptr(uint32(hdr))
	if slotFreq(v) != freqMax {
		atomic.CompareAndSwapUint64(p, v, v+1<<freqShift)
	}
	if f&flagExt != 0 {
		if vl > uintptr(c.maxEntry) {
			return dst, peekRetry, 0, 0
		}
		x := uintptr(headerSize)
		if f&flagTTL != 0 {
			x += 8
		}
		return dst, peekExt, *(*uintptr)(ptr(a + x)), vl
	}
	if vl > room {
		return dst, peekRetry, 0, 0
	}
	return append(dst, unsafe.Slice((*byte)(ptr(val)), vl)...), peekHit, 0, 0
}
