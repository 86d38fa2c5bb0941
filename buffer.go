package offheap

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
	"unsafe"
)

// Buffer is a growable byte buffer in one block of a Heap, for building
// values without Go garbage with fmt.Fprintf, io.Copy or its Write methods;
// Detach keeps the result as a block of its own. Its methods mirror
// bytes.Buffer's, except that a full heap is an error, not a panic, for the
// writing methods. Past its block (Cap) it moves to one at least twice as
// large. The slices Bytes returns are valid until the next call that
// modifies the buffer.
//
// A Buffer is not safe for concurrent use. Only Free (or Detach) gives its
// block back: a Buffer dropped without Free leaks it. After Free or Detach
// it is empty and usable again. Unlike a bytes.Buffer, the zero Buffer has
// no heap to write to: its writes return an error; make Buffers with
// Heap.NewBuffer.
type Buffer struct {
	h    *Heap
	blk  []byte // the block, len(blk) its usable size; nil when the Buffer holds none
	r, w int    // the unread bytes are blk[r:w]
	size int    // the smallest block the Buffer takes when it needs one
}

// errZeroBuffer is the error of a write to the zero Buffer.
var errZeroBuffer = errors.New("offheap: Buffer: the zero Buffer has no heap to write to: make one with Heap.NewBuffer")

// minRead is how much room ReadFrom makes before each Read, as bytes.Buffer.
const minRead = 512

// The interfaces a Buffer is used through.
var (
	_ io.Writer       = (*Buffer)(nil)
	_ io.StringWriter = (*Buffer)(nil)
	_ io.ByteWriter   = (*Buffer)(nil)
	_ io.ReaderFrom   = (*Buffer)(nil)
	_ io.WriterTo     = (*Buffer)(nil)
	_ io.Reader       = (*Buffer)(nil)
	_ io.ByteReader   = (*Buffer)(nil)
)

// NewBuffer returns an empty Buffer on h with room for at least size bytes;
// a size of 0 takes no block until the first write. It panics with the
// error TryNewBuffer returns.
func (h *Heap) NewBuffer(size int) *Buffer {
	b, err := h.TryNewBuffer(size)
	if err != nil {
		panic(err)
	}
	return b
}

// TryNewBuffer is NewBuffer returning the error instead of panicking:
// errors.Is(err, ErrLimit) or ErrAddressSpace when the heap cannot hold the
// block, ErrClosed on a closed heap, ErrSize for a negative or too large
// size.
func (h *Heap) TryNewBuffer(size int) (*Buffer, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: NewBuffer(%d): negative size", ErrSize, size)
	}
	if !h.made() {
		return nil, errUnmade
	}
	if h.closed.Load() {
		return nil, closedError("NewBuffer")
	}
	b := &Buffer{h: h, size: size}
	if err := b.TryGrow(size); err != nil {
		return nil, err
	}
	return b, nil
}

// Len is the number of unread bytes: len(b.Bytes()).
func (b *Buffer) Len() int { return b.w - b.r }

// Cap is the usable size of the buffer's block (0 when it holds none).
func (b *Buffer) Cap() int { return len(b.blk) }

// Bytes returns the unread bytes, in the buffer's block, valid until the
// next call that modifies the buffer. Its capacity is its length, so an
// append to it copies to the Go heap instead of writing into the block.
func (b *Buffer) Bytes() []byte { return b.blk[b.r:b.w:b.w] }

// String returns the unread bytes as a string, a copy on the Go heap.
func (b *Buffer) String() string { return string(b.blk[b.r:b.w]) }

// Reset empties the buffer and keeps its block.
func (b *Buffer) Reset() { b.r, b.w = 0, 0 }

// Truncate discards all but the first n unread bytes and keeps the block. It
// panics if n is negative or more than Len.
func (b *Buffer) Truncate(n int) {
	if n < 0 || n > b.Len() {
		panic(fmt.Sprintf("offheap: Buffer.Truncate(%d) out of range [0, %d]", n, b.Len()))
	}
	b.w = b.r + n
	if n == 0 {
		b.Reset()
	}
}

// Grow makes room for at least n more bytes, so that writing them takes no
// new block. It panics with the error TryGrow returns.
func (b *Buffer) Grow(n int) {
	if err := b.TryGrow(n); err != nil {
		panic(err)
	}
}

// TryGrow is Grow returning Write's errors instead of panicking, and
// ErrSize for a negative n; the buffer is then as it was.
func (b *Buffer) TryGrow(n int) error {
	if n < 0 {
		return fmt.Errorf("%w: Buffer.Grow(%d): negative count", ErrSize, n)
	}
	return b.room(n)
}

// room makes room for n more bytes past b.w, and leaves the buffer as it was
// if it returns an error.
func (b *Buffer) room(n int) error {
	if n <= len(b.blk)-b.w {
		return nil
	}
	old, err := b.grow(n)
	b.free(old)
	return err
}

// grow is room's slow path: slide the unread bytes to the front when that
// leaves at least half the block free (sliding more often would copy the
// same bytes again and again), else move them to a block at least twice as
// large, or, when the heap cannot hold that, to the smallest that holds
// them and n more. It returns the block the buffer left, for the caller to
// free once it has copied what it appends: those bytes may lie in that very
// block (b.Write(b.Bytes())). A slide writes only blk[:m], below the
// unread bytes (it happens when m+n <= len(blk)/2, and the unread bytes end
// past len(blk)-n, so they start past m), and so moves none of them.
func (b *Buffer) grow(n int) (old []byte, err error) {
	if b.h == nil {
		return nil, errZeroBuffer
	}
	m := b.Len()
	if n > maxAlloc-m {
		return nil, fmt.Errorf("%w: a Buffer of %d bytes cannot grow by %d", ErrSize, m, n)
	}
	if m+n <= len(b.blk)/2 {
		copy(b.blk, b.blk[b.r:b.w])
		b.r, b.w = 0, m
		return nil, nil
	}
	need := m + n
	want := max(need, 2*len(b.blk), b.size)
	if want > maxAlloc {
		want = need
	}
	// The whole block, so that the buffer grows to its end with no call.
	// Under a Limit, the sizes between want and need, halving the excess,
	// before need itself is refused.
	var nb []byte
	for {
		nb, err = b.h.tryAllocUnzeroed(int(chunkBytes(uintptr(want))))
		if err == nil || want == need || !errors.Is(err, ErrLimit) {
			break
		}
		want = need + (want-need)/2
		if chunkBytes(uintptr(want)) == chunkBytes(uintptr(need)) {
			want = need
		}
	}
	if err != nil {
		return nil, err
	}
	copy(nb, b.blk[b.r:b.w])
	old = b.blk
	b.blk, b.r, b.w = nb, 0, m
	return old, nil
}

// free gives back a block grow returned, if any.
func (b *Buffer) free(old []byte) {
	if old != nil {
		b.h.Free(old)
	}
}

// release frees the block, if any, and leaves the buffer empty without one.
func (b *Buffer) release() {
	b.free(b.blk)
	b.blk, b.r, b.w = nil, 0, 0
}

// Write appends p to the buffer. Its error is non-nil only when the buffer
// needs a larger block and cannot have it: errors.Is(err, ErrLimit) or
// ErrAddressSpace when the heap cannot hold it, ErrClosed on a closed heap,
// ErrSize past the largest block; the buffer is then as it was. p may be
// the buffer's own bytes.
func (b *Buffer) Write(p []byte) (int, error) {
	if len(p) > len(b.blk)-b.w {
		return growWrite(b, p)
	}
	b.w += copy(b.blk[b.w:], p)
	return len(p), nil
}

// WriteString appends s to the buffer; see Write.
func (b *Buffer) WriteString(s string) (int, error) {
	if len(s) > len(b.blk)-b.w {
		return growWrite(b, s)
	}
	b.w += copy(b.blk[b.w:], s)
	return len(s), nil
}

// growWrite is Write's and WriteString's slow path: it frees the block the
// buffer left only after it has copied p, which may lie in that block.
func growWrite[S []byte | string](b *Buffer, p S) (int, error) {
	old, err := b.grow(len(p))
	if err != nil {
		return 0, err
	}
	b.w += copy(b.blk[b.w:], p)
	b.free(old)
	return len(p), nil
}

// WriteByte appends c to the buffer; see Write.
func (b *Buffer) WriteByte(c byte) error {
	if b.w == len(b.blk) {
		if err := b.room(1); err != nil {
			return err
		}
	}
	b.blk[b.w] = c
	b.w++
	return nil
}

// WriteRune appends the UTF-8 encoding of r to the buffer (that of
// utf8.RuneError for an invalid r) and returns its length; see Write.
func (b *Buffer) WriteRune(r rune) (int, error) {
	if uint32(r) < utf8.RuneSelf {
		return 1, b.WriteByte(byte(r))
	}
	if err := b.room(utf8.UTFMax); err != nil {
		return 0, err
	}
	n := len(utf8.AppendRune(b.blk[b.w:b.w], r))
	b.w += n
	return n, nil
}

// ReadFrom appends what r reads until io.EOF and returns how many bytes it
// appended. It returns any other error of r, and Write's errors, after the
// bytes read before it. r may read from the buffer's own bytes. It
// panics if r returns a count out of range.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	start := unsafe.SliceData(b.blk)
	var first []byte // the block held at the start, once the buffer has left it
	defer func() { b.free(first) }()
	for {
		if minRead > len(b.blk)-b.w {
			old, err := b.grow(minRead)
			if err != nil {
				return total, err
			}
			if old != nil && unsafe.SliceData(old) == start {
				first = old
			} else {
				b.free(old)
			}
		}
		m, err := r.Read(b.blk[b.w:])
		if m < 0 || m > len(b.blk)-b.w {
			panic(fmt.Sprintf("offheap: Buffer.ReadFrom: the reader returned %d bytes read into %d", m, len(b.blk)-b.w))
		}
		b.w += m
		total += int64(m)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// WriteTo writes the unread bytes to w, consuming what w accepts, and
// returns how many it wrote, with w's error or io.ErrShortWrite. w must not
// keep the slice it is given: it is the buffer's block. It panics if w
// returns a count out of range.
func (b *Buffer) WriteTo(w io.Writer) (int64, error) {
	n := b.Len()
	if n == 0 {
		b.Reset()
		return 0, nil
	}
	m, err := w.Write(b.blk[b.r:b.w:b.w])
	if m < 0 || m > n {
		panic(fmt.Sprintf("offheap: Buffer.WriteTo: the writer returned %d bytes written of %d", m, n))
	}
	b.r += m
	if err == nil && m != n {
		err = io.ErrShortWrite
	}
	if b.r == b.w {
		b.Reset()
	}
	return int64(m), err
}

// Read moves up to len(p) unread bytes into p and returns how many. With no
// unread bytes it empties the buffer (keeping its block) and returns io.EOF,
// unless len(p) is 0.
func (b *Buffer) Read(p []byte) (int, error) {
	if b.r == b.w {
		b.Reset()
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, b.blk[b.r:b.w])
	b.r += n
	return n, nil
}

// ReadByte returns the next unread byte, or io.EOF (and empties the buffer,
// keeping its block) when there is none.
func (b *Buffer) ReadByte() (byte, error) {
	if b.r == b.w {
		b.Reset()
		return 0, io.EOF
	}
	c := b.blk[b.r]
	b.r++
	return c, nil
}

// Free gives the buffer's block back to the heap and leaves the buffer empty
// and usable; a second Free does nothing. Slices from Bytes must not be used
// afterwards.
func (b *Buffer) Free() { b.release() }

// Detach hands the unread bytes to the caller as a block of their own, with
// length and capacity Len, to keep, Ref, and give back with the heap's Free;
// the buffer is left empty. An empty buffer returns an empty slice. Detach
// panics, as Alloc does, when the heap is closed.
func (b *Buffer) Detach() []byte {
	if b.h.closed.Load() {
		panic(fmt.Errorf("%w: Buffer.Detach", ErrClosed))
	}
	n := b.Len()
	if n == 0 {
		b.Reset()
		return []byte{}
	}
	if chunkBytes(uintptr(n)) < uintptr(len(b.blk)) {
		if v, err := b.h.tryAllocUnzeroed(n); err == nil {
			copy(v, b.blk[b.r:b.w])
			b.Reset()
			return v
		}
		// No room for the copy: hand over the block itself.
	}
	copy(b.blk, b.blk[b.r:b.w])
	v := b.blk[:n:n]
	b.blk, b.r, b.w = nil, 0, 0
	return v
}
