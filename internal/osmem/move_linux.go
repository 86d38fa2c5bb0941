//go:build linux && (amd64 || arm64)

package osmem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Move moves the pages of [src, src+n) to [dst, dst+n) with mremap
// (MREMAP_MAYMOVE|MREMAP_FIXED|MREMAP_DONTUNMAP): the page tables change and
// no byte is copied. Whatever dst held is discarded. src stays mapped with
// its protection, holding no pages, so that it reads as zeros and no other
// mapping can take its place. Both ranges must be page aligned and private
// anonymous, and the kernel Linux 5.7 or later (before 6.17, src must also
// lie in one mapping: one mmap, mprotect'ed the same throughout).
//
// When the kernel refuses, src is as it was and dst is mapped read-write
// with its contents either kept or zero (a kernel that unmaps dst before it
// checks src leaves a hole, which Move maps again at once with
// MAP_FIXED_NOREPLACE, so that it can never replace another mapping): the
// caller copies instead. Should another mapping have taken the hole first,
// Move fails with ErrLost.
func Move(dst, src unsafe.Pointer, n uintptr) error {
	p, err := unix.MremapPtr(src, n, dst, n, unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED|unix.MREMAP_DONTUNMAP)
	if err == nil && p == dst {
		return nil
	}
	if err == nil { // MREMAP_FIXED: cannot happen
		return fmt.Errorf("offheap: mremap %#x+%d to %#x moved it to %#x", uintptr(src), n, uintptr(dst), uintptr(p))
	}
	err = fmt.Errorf("offheap: mremap %#x+%d to %#x: %w", uintptr(src), n, uintptr(dst), err)
	var vec [1]byte
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(dst), PageSize, uintptr(unsafe.Pointer(&vec[0]))); e != unix.ENOMEM {
		return err // dst is mapped: the kernel refused before it touched it
	}
	q, merr := unix.MmapPtr(-1, 0, dst, n, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED_NOREPLACE)
	if merr != nil || q != dst {
		if merr == nil {
			_ = unix.MunmapPtr(q, n) // a kernel before 4.17 took NOREPLACE for a hint
		}
		return fmt.Errorf("%w (%w)", ErrLost, err)
	}
	return err
}

// Renew replaces [p, p+n), read-write private anonymous memory, with a new
// mapping of the same kind: its pages read as zeros afterwards and hold no
// memory, as after Release. Unlike Release, it undoes what Move did to the
// range: pages Move brought in keep their old place's page offset, so the
// kernel keeps them a mapping of their own, apart from their neighbours,
// and so does Move's source range, emptied; a new mapping has the offset of
// its place and merges with read-write neighbours that have theirs. The
// range is never unmapped meanwhile (MAP_FIXED replaces it in one call), so
// no other mapping can take it.
func Renew(p unsafe.Pointer, n uintptr) error {
	m, err := pages(p, n)
	if err == nil {
		var q unsafe.Pointer
		q, err = unix.MmapPtr(-1, 0, p, m, unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED)
		if err == nil && q != p {
			err = unix.EINVAL // MAP_FIXED: cannot happen
		}
	}
	if err != nil {
		return fmt.Errorf("offheap: mmap(MAP_FIXED) %#x+%d: %w", uintptr(p), n, err)
	}
	return nil
}
