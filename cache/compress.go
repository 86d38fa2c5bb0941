package cache

// Block compression for snapshots: a greedy LZ77 of this package's own
// design, so that a snapshot of repetitive values writes and reads fewer
// bytes, with no dependency. A compressed block is a sequence of
//
//	uvarint literal length, the literal bytes,
//	uvarint match length (0 ends the block), uvarint match offset (back from the output's end)
//
// Matches are at least minMatch bytes, found through a table of the last
// position of each hashed 4-byte sequence; the scan steps faster over
// bytes that keep finding no match, so incompressible data costs little
// before the block is stored as it is.

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

const (
	minMatch  = 4
	tableBits = 14
)

// compressor holds a compression table, reused block to block. A table
// entry is a position plus base plus 1, so that the entries of earlier
// calls (below base) read as empty without clearing the table each call.
type compressor struct {
	table [1 << tableBits]int32
	base  int32
}

func hash4(u uint32) uint32 { return u * 0x1E35A7BD >> (32 - tableBits) }

// compress appends the compressed form of src to dst and returns it, or
// returns nil if it would not be smaller than src.
func (z *compressor) compress(dst, src []byte) []byte {
	if len(src) < 16 || len(src) > 1<<31-1 {
		return nil
	}
	if z.base > 1<<30-int32(len(src)) {
		clear(z.table[:])
		z.base = 0
	}
	base := int(z.base)
	z.base += int32(len(src)) + 1
	start := len(dst)
	lit := 0 // start of the pending literals
	limit := len(src) - minMatch
	for i, miss := 0, 0; i <= limit; {
		u := binary.LittleEndian.Uint32(src[i:])
		h := hash4(u)
		cand := int(z.table[h]) - base - 1
		z.table[h] = int32(base + i + 1)
		if cand < 0 || binary.LittleEndian.Uint32(src[cand:]) != u {
			miss++
			i += 1 + miss>>5
			continue
		}
		miss = 0
		n := minMatch
		for i+n+8 <= len(src) {
			x := binary.LittleEndian.Uint64(src[i+n:]) ^ binary.LittleEndian.Uint64(src[cand+n:])
			if x != 0 {
				n += bits.TrailingZeros64(x) >> 3
				break
			}
			n += 8
		}
		if i+n+8 > len(src) {
			for i+n < len(src) && src[cand+n] == src[i+n] {
				n++
			}
		}
		dst = binary.AppendUvarint(dst, uint64(i-lit))
		dst = append(dst, src[lit:i]...)
		dst = binary.AppendUvarint(dst, uint64(n))
		dst = binary.AppendUvarint(dst, uint64(i-cand))
		if len(dst)-start >= len(src) {
			return nil
		}
		i += n
		lit = i
	}
	dst = binary.AppendUvarint(dst, uint64(len(src)-lit))
	dst = append(dst, src[lit:]...)
	dst = append(dst, 0)
	if len(dst)-start >= len(src) {
		return nil
	}
	return dst
}

var errCorrupt = errors.New("a compressed block is corrupt")

// decompress appends src's decompressed bytes to dst, which must end up at
// most max bytes long.
func decompress(dst, src []byte, max int) ([]byte, error) {
	for {
		l, n := binary.Uvarint(src)
		if n <= 0 || l > uint64(len(src)-n) || uint64(len(dst))+l > uint64(max) {
			return nil, errCorrupt
		}
		dst = append(dst, src[n:n+int(l)]...)
		src = src[n+int(l):]
		m, n := binary.Uvarint(src)
		if n <= 0 {
			return nil, errCorrupt
		}
		src = src[n:]
		if m == 0 {
			if len(src) != 0 {
				return nil, errCorrupt
			}
			return dst, nil
		}
		off, n := binary.Uvarint(src)
		if n <= 0 || off == 0 || off > uint64(len(dst)) || uint64(len(dst))+m > uint64(max) {
			return nil, errCorrupt
		}
		src = src[n:]
		dst = appendMatch(dst, int(off), int(m))
	}
}

// appendMatch appends m bytes copied from off bytes back from dst's end,
// where a match longer than off repeats its first off bytes. It copies
// from one place, the match's start: the bytes from there on repeat with
// period off, so each append may take all of them, twice as many as the
// last. A run of one byte, m long, takes log2(m) appends, not m, so that a
// damaged block of a few bytes that claims a long run costs little more
// than the memory it claims (docs/DESIGN.md, Snapshots).
func appendMatch(dst []byte, off, m int) []byte {
	from := len(dst) - off
	for m > 0 {
		k := min(m, len(dst)-from)
		dst = append(dst, dst[from:from+k]...)
		m -= k
	}
	return dst
}
