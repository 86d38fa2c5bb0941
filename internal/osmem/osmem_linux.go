//go:build linux && (amd64 || arm64)

package osmem

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Supported reports whether this system has a backend.
const Supported = true

// PageSize is the operating system's page size, a power of two: the unit
// of every call here. A start that is not a multiple of it fails with
// EINVAL, and a length is rounded up to whole pages, by the kernel or, in a
// build that simulates larger pages, by simulate.go.
var PageSize = max(hostPage, simPage)

// hostPage is the page size of the kernel the process runs on.
var hostPage = uintptr(os.Getpagesize())

// Reserve maps n bytes of address space that cannot be read or written until
// Commit. MAP_NORESERVE keeps the reservation from counting against the
// system's commit limit.
func Reserve(n uintptr) (unsafe.Pointer, error) {
	p, err := mmap(n, unix.PROT_NONE)
	if err != nil {
		return nil, fmt.Errorf("offheap: reserving %d bytes of address space: %w", n, err)
	}
	return p, nil
}

// Map maps n bytes readable and writable, zero filled, for metadata. Pages are
// backed only when first touched.
func Map(n uintptr) (unsafe.Pointer, error) {
	p, err := mmap(n, unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return nil, fmt.Errorf("offheap: mapping %d bytes: %w", n, err)
	}
	return p, nil
}

// Commit makes [p, p+n) readable and writable.
func Commit(p unsafe.Pointer, n uintptr) error {
	return protect(p, n, unix.PROT_READ|unix.PROT_WRITE)
}

// Protect makes [p, p+n) fault on any access, without giving up the pages'
// contents: Commit makes them usable again.
func Protect(p unsafe.Pointer, n uintptr) error {
	return protect(p, n, unix.PROT_NONE)
}

// ReadOnly makes [p, p+n) fault on writes.
func ReadOnly(p unsafe.Pointer, n uintptr) error {
	return protect(p, n, unix.PROT_READ)
}

func protect(p unsafe.Pointer, n uintptr, prot int) error {
	m, err := pages(p, n)
	if err == nil {
		err = unix.Mprotect(unsafe.Slice((*byte)(p), m), prot)
	}
	if err != nil {
		return fmt.Errorf("offheap: mprotect %#x+%d: %w", uintptr(p), n, err)
	}
	return nil
}

// Release gives the pages of [p, p+n) back to the operating system. The range
// stays mapped: the next touch gets a fresh zero page.
func Release(p unsafe.Pointer, n uintptr) error {
	m, err := pages(p, n)
	if err == nil {
		err = unix.Madvise(unsafe.Slice((*byte)(p), m), unix.MADV_DONTNEED)
	}
	if err != nil {
		return fmt.Errorf("offheap: madvise %#x+%d: %w", uintptr(p), n, err)
	}
	return nil
}

// Unmap removes [p, p+n) from the address space.
func Unmap(p unsafe.Pointer, n uintptr) error {
	m, err := pages(p, n)
	if err == nil {
		err = unix.MunmapPtr(p, m)
	}
	if err != nil {
		return fmt.Errorf("offheap: munmap %#x+%d: %w", uintptr(p), n, err)
	}
	return nil
}

// Resident fills vec with one byte per system page of [p, p+n), whose low
// bit is set when the page is in memory (mincore). A page that is not may
// never have been touched, or may be swapped out: the caller must not take
// it for a zero page. len(vec) must be at least n/PageSize, rounded up.
func Resident(p unsafe.Pointer, n uintptr, vec []byte) error {
	if need := (n + PageSize - 1) / PageSize; uintptr(len(vec)) < need {
		return fmt.Errorf("offheap: mincore %#x+%d: vector of %d bytes, want %d", uintptr(p), n, len(vec), need)
	}
	if err := mincore(p, n, vec); err != nil {
		return fmt.Errorf("offheap: mincore %#x+%d: %w", uintptr(p), n, err)
	}
	return nil
}

// Memory returns the machine's physical memory plus its swap, in bytes: the
// most one private writable mapping may take under Linux's default
// overcommit heuristic. 0 if the system does not say.
func Memory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return (si.Totalram + si.Totalswap) * uint64(si.Unit)
}
