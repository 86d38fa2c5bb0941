// Package osmem asks the operating system for address space and pages: reserve,
// commit, release, protect, unmap. Every call works on page-aligned ranges
// given as a base pointer and a length; nothing here allocates from the Go
// heap. (In a race build offheap's heap is Go memory, whose pages Release
// gives back and Resident reports as any private anonymous mapping's.)
//
// The backend is Linux on amd64 and arm64: 64-bit, little
// endian, as the heap's metadata and checked mode's canaries assume.
// Everywhere else every call fails with ErrUnsupported.
package osmem

import (
	"errors"
	"fmt"
	"runtime"
)

// ErrUnsupported is returned on systems where offheap has no memory backend.
// It wraps errors.ErrUnsupported, so callers can fall back on make with
// errors.Is(err, errors.ErrUnsupported).
var ErrUnsupported = fmt.Errorf("offheap: no off-heap memory backend for %s/%s (offheap runs on linux/amd64 and linux/arm64): %w",
	runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)

// ErrLost is Move's error when dst is no longer the caller's: the kernel
// unmapped it before it refused the move, and another mapping took the
// address range before Move could map it again. The caller must never touch
// dst again.
var ErrLost = errors.New("offheap: mremap failed after unmapping its destination, which another mapping has taken")
