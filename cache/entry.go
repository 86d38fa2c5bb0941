package cache

// A record is one entry in a shard's log: an 8-byte header,
// then the expiry if the entry has one, then the address of the value's own
// heap block if the value is large, then the key, then the value unless it
// lives in its own block.
//
//	offset 0  uint64  header: value length in bits 0-31, key length in 32-47,
//	                  flags in 48-55 (flagTTL, flagExt, flagDead), 56-63 zero
//	then      int64   expiry, ns on the cache's monotonic clock (flagTTL only)
//	then      uintptr the value's heap block (flagExt only)
//	then      the key, then the value (inline only)
//
// A record starts 8-aligned and takes recordLen bytes. Records hold no Go
// pointers: only lengths, a time, an address of heap memory and bytes.

import (
	"bytes"
	"unsafe"
)

const (
	headerSize = 8
	maxKeyLen  = 1<<16 - 1

	flagTTL  = 1 // the record holds an expiry
	flagExt  = 2 // the value is in a heap block of its own
	flagDead = 4 // no slot points at the record: deleted, replaced, evicted or moved
)

// ptr turns an address of heap memory into a pointer. It reinterprets the
// word instead of converting it, because the address did not come from a Go
// pointer in the same expression (the only conversion go vet and checkptr
// accept); the heap's memory is mapped by the offheap package, outside the
// Go heap, so the collector neither frees nor moves it, and the address stays
// valid until the block is freed.
func ptr(a uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}

// addrOf is the address of b's first byte.
func addrOf(b []byte) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// recordLen is the bytes a record takes in its segment: a key of k bytes, a
// value of v bytes (inline unless ext), an expiry if ttl; rounded up to 8.
func recordLen(k, v int, ttl, ext bool) int {
	n := headerSize + k
	if ttl {
		n += 8
	}
	if ext {
		n += 8
	} else {
		n += v
	}
	return (n + 7) &^ 7
}

// entry is a view of the record at an address.
type entry uintptr

// hdr is the record's header word.
func (e entry) hdr() uint64 { return *(*uint64)(ptr(uintptr(e))) }

func (e entry) valueLen() int { return int(uint32(e.hdr())) }
func (e entry) keyLen() int   { return int(e.hdr() >> 32 & 0xffff) }
func (e entry) flags() uint8  { return uint8(e.hdr() >> 48) }
func (e entry) dead() bool    { return e.flags()&flagDead != 0 }
func (e entry) markDead()     { *(*uint64)(ptr(uintptr(e))) |= flagDead << 48 }

// expiry is the entry's expiry, or 0 for none.
func (e entry) expiry() int64 {
	if e.hdr()>>48&flagTTL == 0 {
		return 0
	}
	return *(*int64)(ptr(uintptr(e) + headerSize))
}

// extOff is the offset of the value block's address (flagExt), and keyOff
// that of the key.
func (e entry) extOff() uintptr {
	if e.flags()&flagTTL != 0 {
		return headerSize + 8
	}
	return headerSize
}

func (e entry) keyOff() uintptr {
	o := e.extOff()
	if e.flags()&flagExt != 0 {
		o += 8
	}
	return o
}

// size is the record's length in its segment.
func (e entry) size() int {
	f := e.flags()
	return recordLen(e.keyLen(), e.valueLen(), f&flagTTL != 0, f&flagExt != 0)
}

func (e entry) key() []byte {
	return unsafe.Slice((*byte)(ptr(uintptr(e)+e.keyOff())), e.keyLen())
}

// ext is the value's own heap block, or nil for an inline value.
func (e entry) ext() []byte {
	if e.flags()&flagExt == 0 {
		return nil
	}
	a := *(*uintptr)(ptr(uintptr(e) + e.extOff()))
	return unsafe.Slice((*byte)(ptr(a)), e.valueLen())
}

func (e entry) value() []byte {
	if h := e.hdr(); h>>48&0xff == 0 {
		return unsafe.Slice((*byte)(ptr(uintptr(e)+headerSize+uintptr(h>>32&0xffff))), int(uint32(h)))
	}
	if e.flags()&flagExt != 0 {
		return e.ext()
	}
	return unsafe.Slice((*byte)(ptr(uintptr(e)+e.keyOff()+uintptr(e.keyLen()))), e.valueLen())
}

// keyIs reports whether the entry's key is k. A record with no expiry and
// an inline value, the common case, is read from one load of its header.
func (e entry) keyIs(k []byte) bool {
	h := e.hdr()
	if int(h>>32&0xffff) != len(k) {
		return false
	}
	off := uintptr(headerSize)
	if h>>48&0xff&^flagDead != 0 {
		off = e.keyOff()
	}
	return bytes.Equal(unsafe.Slice((*byte)(ptr(uintptr(e)+off)), len(k)), k)
}

// writeRecord writes a record at a (recordLen bytes): key k, value v (or,
// if ext is not nil, v copied into ext and ext's address recorded), expiry
// exp (0 for none).
func writeRecord(a uintptr, k, v, ext []byte, exp int64) entry {
	e := entry(a)
	var f uint8
	o := uintptr(headerSize)
	if exp != 0 {
		f |= flagTTL
		*(*int64)(ptr(a + o)) = exp
		o += 8
	}
	if ext != nil {
		f |= flagExt
		*(*uintptr)(ptr(a + o)) = addrOf(ext)
		o += 8
		copy(ext, v)
	}
	*(*uint64)(ptr(a)) = uint64(len(v)) | uint64(len(k))<<32 | uint64(f)<<48
	copy(unsafe.Slice((*byte)(ptr(a+o)), len(k)), k)
	if ext == nil {
		copy(unsafe.Slice((*byte)(ptr(a+o+uintptr(len(k)))), len(v)), v)
	}
	return e
}
