package cache

// An entry is one heap block: a 16-byte header, the key, then the value.
//
//	offset 0   uint32  value length
//	offset 4   uint16  key length
//	offset 6   uint16  unused (zero)
//	offset 8   int64   expiry, nanoseconds on the cache's monotonic clock; 0 means never
//	offset 16  key bytes, then value bytes
//
// The block is allocated with exactly entrySize bytes; the heap rounds it up
// to its size class, and the cache counts the rounded size against MaxBytes.
// Entries hold no Go pointers: only lengths, a time and bytes.

import (
	"bytes"
	"unsafe"
)

const (
	headerSize = 16
	maxKeyLen  = 1<<16 - 1
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

// entrySize is the bytes an entry with a key of k bytes and a value of v
// bytes takes before rounding to a size class.
func entrySize(k, v int) int { return headerSize + k + v }

// entry is a view of the block at an address. Its methods read the header
// each time: the block's lengths never change after it is written, except by
// a Set of a value of the same length, which rewrites only the value.
type entry uintptr

func (e entry) valueLen() int { return int(*(*uint32)(ptr(uintptr(e)))) }
func (e entry) keyLen() int   { return int(*(*uint16)(ptr(uintptr(e) + 4))) }
func (e entry) expiry() int64 { return *(*int64)(ptr(uintptr(e) + 8)) }
func (e entry) setExpiry(t int64) {
	*(*int64)(ptr(uintptr(e) + 8)) = t
}

// size is the entry's block length.
func (e entry) size() int { return entrySize(e.keyLen(), e.valueLen()) }

// block is the entry's whole block, as the heap's Free and Relocate take it.
func (e entry) block() []byte { return unsafe.Slice((*byte)(ptr(uintptr(e))), e.size()) }

func (e entry) key() []byte {
	return unsafe.Slice((*byte)(ptr(uintptr(e)+headerSize)), e.keyLen())
}

func (e entry) value() []byte {
	return unsafe.Slice((*byte)(ptr(uintptr(e)+headerSize+uintptr(e.keyLen()))), e.valueLen())
}

// keyIs reports whether the entry's key is k.
func (e entry) keyIs(k []byte) bool {
	return e.keyLen() == len(k) && bytes.Equal(e.key(), k)
}

// writeEntry fills block b (of entrySize(len(k), len(v)) bytes) with an
// entry and returns it.
func writeEntry(b, k, v []byte, exp int64) entry {
	e := entry(addrOf(b))
	*(*uint32)(ptr(uintptr(e))) = uint32(len(v))
	*(*uint16)(ptr(uintptr(e) + 4)) = uint16(len(k))
	*(*uint16)(ptr(uintptr(e) + 6)) = 0
	e.setExpiry(exp)
	copy(b[headerSize:], k)
	copy(b[headerSize+len(k):], v)
	return e
}
