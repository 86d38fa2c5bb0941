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
	return madvise(p, n, unix.MADV_DONTNEED, "")
}

// NoHugePages asks the kernel to back [p, p+n) with small pages only
// (MADV_NOHUGEPAGE). It is for metadata written a few words at a time: on a
// kernel whose transparent huge pages are always on, a write there would
// make a whole huge page resident (2 MiB, or 32 MiB with 16 KiB pages), and
// a Release of part of it would give nothing back. A kernel built without
// transparent huge pages refuses the call, and has nothing to refuse.
func NoHugePages(p unsafe.Pointer, n uintptr) error {
	return madvise(p, n, unix.MADV_NOHUGEPAGE, "(MADV_NOHUGEPAGE)")
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

// MaxMappings is the most mappings the kernel lets a process have
// (vm.max_map_count), or its default, 65,530, where the system does not
// say.
func MaxMappings() int {
	b, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		return defaultMaxMappings
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	if n <= 0 {
		return defaultMaxMappings
	}
	return n
}

// defaultMaxMappings is Linux's default vm.max_map_count.
const defaultMaxMappings = 65530

// Populate makes the pages of [p, p+n) resident and writable now, in one
// call (MADV_POPULATE_WRITE), rather than a fault per page at first
// touch: for memory about to be written whole. A kernel before 5.14
// refuses it; the pages then fault in as they are touched.
func Populate(p unsafe.Pointer, n uintptr) error {
	return madvise(p, n, unix.MADV_POPULATE_WRITE, "(MADV_POPULATE_WRITE)")
}

// madvise gives the kernel advice for the pages of [p, p+n); name is how
// an error names the advice.
func madvise(p unsafe.Pointer, n uintptr, advice int, name string) error {
	m, err := pages(p, n)
	if err == nil {
		err = unix.Madvise(unsafe.Slice((*byte)(p), m), advice)
	}
	if err != nil {
		return fmt.Errorf("offheap: madvise%s %#x+%d: %w", name, uintptr(p), n, err)
	}
	return nil
}
