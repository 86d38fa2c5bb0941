package offheap

// The Try forms of the allocating calls that had none: each returns the
// error its panicking form panics with, when the memory cannot be had.

import (
	"errors"
	"sync/atomic"
	"syscall"
)

// TryRealloc is Realloc returning the error, b then as it was: errors.Is(err,
// ErrLimit) past Options.Limit, ErrAddressSpace when the heap's address
// space cannot grow, ErrClosed after the heap's Close, ErrSize for a
// negative n or one no heap can hold, or a wrapped syscall.Errno when the
// system refuses memory. Misuse panics, as in Realloc.
func (h *Heap) TryRealloc(b []byte, n int) ([]byte, error) {
	return h.tryRealloc(b, n, true)
}

// TryReallocUnzeroed is ReallocUnzeroed returning the error instead of
// panicking: TryRealloc's errors, in the same cases.
func (h *Heap) TryReallocUnzeroed(b []byte, n int) ([]byte, error) {
	return h.tryRealloc(b, n, false)
}

// tryRealloc is realloc with its allocation errors returned. Realloc
// panics with one before it changes anything (b stays as it was and
// nothing is allocated), so recovering it leaves the heap as it was.
func (h *Heap) tryRealloc(b []byte, n int, zero bool) (nb []byte, err error) {
	defer recoverAllocError(&err)
	return h.realloc(b, n, zero), nil
}

// recoverAllocError, deferred, turns a panic with an allocation error
// (allocError) into *err, for a Try form built on the panicking call; every
// other panic goes on. The call's results stay zero.
func recoverAllocError(err *error) {
	if r := recover(); r != nil {
		e, ok := r.(error)
		if !ok || !allocError(e) {
			panic(r)
		}
		*err = e
	}
}

// allocError reports whether err says memory could not be had, which a Try
// form returns, rather than misuse, which it panics with: one of the
// allocation errors, or the system's refusal to map or commit memory (its
// errno, wrapped), which TryAlloc returns as it is. No misuse panic wraps
// an errno, and every allocation fails before the call changes anything.
func allocError(err error) bool {
	var errno syscall.Errno
	return errors.Is(err, ErrLimit) || errors.Is(err, ErrClosed) || errors.Is(err, ErrSize) ||
		errors.Is(err, ErrAddressSpace) || errors.As(err, &errno)
}

// TryAllocUnzeroed is AllocUnzeroed returning the error instead of
// panicking: TryAlloc's errors, in the same cases. It panics after the
// Local's Close.
//
//go:nosplit
//go:noinline
func (c *Local) TryAllocUnzeroed(n int) ([]byte, error) {
	h := c.h // Alloc's fast path, for the reasons given there
	if uint(n)-1 < cacheMax && atomic.LoadUintptr(&h.fastSize) != 0 {
		if a := c.st.pop(sizeClass(n)); a != 0 {
			if n > 8 { // an 8-byte block has no key
				(*[2]uint64)(ptr(a))[1] = 0 // the double-free key
			}
			return bytesAt(a, n), nil
		}
	}
	// Zeroed past the stack: the heap's unzeroed path has no Try form
	// that a Local reaches (allocVia), and zeroed bytes are bytes
	// "whatever the memory last held" allows.
	return c.slow(n, true, "TryAllocUnzeroed")
}

// TryAllocUnzeroed is AllocUnzeroed returning the error instead of
// panicking: TryAlloc's errors, in the same cases.
func (a *Arena) TryAllocUnzeroed(n int) ([]byte, error) {
	if x := a.allocFast(n); x != 0 {
		return bytesAt(x, n), nil
	}
	return a.alloc(n, false)
}
