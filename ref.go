package offheap

// Ref: a handle to a block that holds no Go pointer.
//
// A Go map from keys to []byte is scanned by the garbage collector on every
// cycle, because each slice header holds a pointer, even when the bytes are
// off-heap; a map whose keys and values hold no pointers is never scanned.
// A Ref is what a program keeps in such a map instead of the slice: 16 bytes,
// two integers, and Heap.Bytes turns it back into the slice.
//
// # Encoding
//
//	off   bits  0-47  the block's compact offset in its heap's address space (refOffset)
//	      bits 48-63  the high half of the heap's tag
//	n     bits  0-47  the slice's length
//	      bits 48-63  the low half of the heap's tag
//
// A heap's tag is a process-wide counter, never 0, so the zero Ref matches no
// heap. Bytes XORs the heap's tag words (refKey) out of both fields: for a
// Ref of this heap both high halves become 0, and one test of (off|n)>>48
// checks the tag, and that the fields are in range. The rest of the fast
// path is one bounds test (refFast) and an add.
//
// Two heaps share a tag only when 2^32-1 heaps were made between them. A
// Ref of one then resolves in the other to whatever that heap holds at the
// same offset: never memory outside the heap's address space (refAddr bounds
// every Ref), but not the block the Ref was made from. A Ref of a closed heap
// resolves in no other heap (the tag is not reused) and panics in its own.
//
// Offsets and lengths are below 2^48 (256 TiB), more than the address space
// of any heap on a 64-bit system with 48-bit virtual addresses (128 TiB of
// user space), so every block has a Ref. Ref refuses anything larger.

import (
	"fmt"
)

// Ref is a handle to a block of a Heap (or a prefix of one) with no Go
// pointer in it: two integers, comparable. Keep Refs where slices would cost
// the garbage collector a scan, such as the values of a Go map, and call
// Heap.Bytes for the slice. A Ref does not own its block: after the block's
// Free it dangles, as the slice would. The zero Ref names nothing.
type Ref struct {
	off uint64 // compact offset, high tag half in the top 16 bits
	n   uint64 // length, low tag half in the top 16 bits
}

// IsZero reports whether r is the zero Ref, which names no block: the value
// a map lookup returns for a missing key.
func (r Ref) IsZero() bool { return r == Ref{} }

// Len is the length of the slice r names, without resolving it: the length
// of the slice Heap.Bytes returns (0 for the zero Ref).
func (r Ref) Len() int { return int(r.n & (refMax - 1)) }

// Ref returns the handle of b, a slice this heap's Alloc (or any call that
// returns a block) returned, or a prefix of one: Bytes(h.Ref(b)) is b again.
// An empty b names no memory, and Bytes turns its Ref into an empty slice.
// Ref panics, as Free does, when b is not such a slice of a live block; a
// fast heap cannot tell a freed small block from a live one, a checked heap
// panics with a *MemoryError of kind UseAfterFree.
func (h *Heap) Ref(b []byte) Ref {
	// The pagemap and the records are read between enter and exit: Close
	// unmaps them.
	if !h.enter() {
		panic(fmt.Errorf("%w: Ref of %#x", ErrClosed, addrOf(b)))
	}
	defer h.exit()
	if len(b) == 0 {
		return Ref{h.ref.off, h.ref.n}
	}
	a := addrOf(b)
	h.checkRef(a, uint64(len(b)), "Ref")
	off, ok := h.refOffset(a)
	if !ok || uint64(len(b)) >= refMax {
		panic(fmt.Sprintf("offheap: Ref of %d bytes at %#x: past what a Ref encodes (offsets and lengths below 256 TiB)", len(b), a))
	}
	return Ref{off | h.ref.off, uint64(len(b)) | h.ref.n}
}

// checkRef panics unless the n > 0 bytes at a are a live block of h or a
// prefix of one (see Ref); op names the call for the message.
func (h *Heap) checkRef(a uintptr, n uint64, op string) {
	if h.checked() {
		h.checkRecordRef(a, n, op)
		return
	}
	switch p := h.placeOf(a); p.kind { // what Free's refusals take too
	case placeGuarded: // a sampled heap's guarded block: the checker has its record
		h.checkRecordRef(a, n, op)
	case placeSmall, placeRun:
		if n > uint64(p.size) {
			panic(fmt.Sprintf("offheap: %s of %d bytes at %#x, past the end of its %d-byte block%s", op, n, a, p.size, refHint))
		}
	default:
		panic(fmt.Sprintf("offheap: %s of %#x (%d bytes), which %s%s", op, a, n, p.why(a), refHint))
	}
}

// Bytes returns the slice r names, with the length h.Ref was given, for
// about the cost of a slice expression. It panics, naming the problem, for
// the zero Ref, a Ref of another heap, and on a closed heap. A fast heap
// resolves a Ref of a freed block (using it is a use after free); a checked
// heap panics with a *MemoryError of kind UseAfterFree. The slice is valid
// while the block is: where other goroutines may free it, use the bytes
// before the lock that guards the Ref is released (ExampleRef_concurrent).
func (h *Heap) Bytes(r Ref) []byte {
	off, n := r.off^h.ref.off, r.n^h.ref.n
	if a, ok := h.refFast(off, n); ok && (off|n)>>refShift == 0 {
		return bytesAt(a, int(n))
	}
	return h.bytesSlow(r)
}

// bytesSlow resolves every Ref that Bytes' fast path did not: the empty
// ones, those of a checked heap, and the ones it refuses.
func (h *Heap) bytesSlow(r Ref) []byte {
	off, n := r.off^h.ref.off, r.n^h.ref.n
	switch {
	case r.IsZero():
		panic("offheap: Bytes of the zero Ref, which names no block: test IsZero first (a map lookup of a missing key returns the zero Ref)")
	case (off|n)>>refShift != 0:
		k := refKey(r)
		panic(fmt.Sprintf("offheap: Bytes of a Ref of another heap (tag %#x; this heap's is %#x): resolve a Ref with the heap whose Ref method made it",
			k.tag(), h.ref.tag()))
	case h.closed.Load():
		panic(fmt.Errorf("%w: Bytes of a Ref", ErrClosed))
	case n == 0:
		return []byte{}
	}
	a, ok := h.refAddr(off, n)
	if !ok {
		panic(fmt.Sprintf("offheap: Bytes of a Ref to %d bytes at offset %#x, past the end of this heap's address space: no Ref of this heap says that (a corrupted Ref?)", n, off))
	}
	if h.checked() {
		if !h.enter() { // the records, as in Ref
			panic(fmt.Errorf("%w: Bytes of a Ref", ErrClosed))
		}
		defer h.exit()
		h.checkRecordRef(a, n, "Bytes of a Ref")
	}
	return bytesAt(a, int(n))
}

// FreeRef frees the block r names, as Free(h.Bytes(r)) would, and panics
// where Free does: a block already freed is a double free. The zero Ref is
// ignored, as Free ignores nil, and so is a Ref of an empty slice. A Ref of
// another heap panics, naming the heap whose Ref method made it.
func (h *Heap) FreeRef(r Ref) {
	if r.IsZero() {
		return
	}
	off, n := r.off^h.ref.off, r.n^h.ref.n
	if (off|n)>>refShift != 0 || h.closed.Load() {
		h.bytesSlow(r) // panics, naming the problem
	}
	if n == 0 {
		return
	}
	a, ok := h.refAddr(off, n)
	if !ok {
		h.bytesSlow(r)
	}
	h.Free(bytesAt(a, int(n)))
}
