//go:build linux && (amd64 || arm64)

package osmem

import (
	"fmt"
	"unsafe"
)

// residentChunk is how many pages one mincore call asks about: a 4 KiB
// vector, 16 MiB of address space with 4 KiB pages.
const residentChunk = 4096

// ResidentBytes returns how many bytes of [p, p+n) are resident in physical
// memory, from mincore: one system call per residentChunk pages, in which
// the kernel walks the range's page tables. Pages never touched, or
// released, are not resident; [p, p+n) must be mapped (it may be
// inaccessible).
func ResidentBytes(p unsafe.Pointer, n uintptr) (uint64, error) {
	var vec [residentChunk]byte
	var pages uint64
	for off := uintptr(0); off < n; off += residentChunk * PageSize {
		k := min(n-off, residentChunk*PageSize)
		if err := mincore(unsafe.Add(p, off), k, vec[:]); err != nil {
			return 0, fmt.Errorf("offheap: mincore %#x+%d: %w", uintptr(p)+off, k, err)
		}
		for _, v := range vec[:(k+PageSize-1)/PageSize] {
			pages += uint64(v & 1) // the low bit: resident; the others are reserved
		}
	}
	return pages * uint64(PageSize), nil
}
