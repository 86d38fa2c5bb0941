//go:build linux && (amd64 || arm64)

package osmem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Larger pages, simulated. A build with the tag offheappage16k or
// offheappage64k runs on the host's
// kernel as if its pages were 16 or 64 KiB, where the host's are smaller,
// so that tests on any machine see what such a kernel does to the heap:
//
//   - PageSize reports the simulated size.
//   - Reserve and Map return addresses aligned to it, lengths rounded up to
//     it: the host mapping is made a simulated page longer and trimmed.
//   - Commit, Protect, ReadOnly, Release and Unmap fail with EINVAL for a
//     start that is not aligned to it, as mprotect, madvise and munmap do,
//     and round an aligned call's length up to whole simulated pages: the
//     host protects or releases the whole rounded range, so that a release
//     of 8 KiB zeroes the rest of its 64 KiB page on a 4 KiB machine too.
//   - Resident and ResidentBytes report a simulated page as resident when
//     any host page of it is, as one page of a real kernel is resident
//     whole.
//
// In a plain build simPage is 0 and every check below is compiled out:
// the kernel does the same itself.

// simulating reports whether this build simulates pages larger than the
// host's.
func simulating() bool { return simPage != 0 && PageSize > hostPage }

// pages is the length a kernel with PageSize pages gives a call on
// [p, p+n): n rounded up to whole pages, or EINVAL for a start that is not
// on a page boundary.
func pages(p unsafe.Pointer, n uintptr) (uintptr, error) {
	if !simulating() {
		return n, nil // the kernel rounds and checks
	}
	if uintptr(p)&(PageSize-1) != 0 {
		return 0, unix.EINVAL
	}
	return (n + PageSize - 1) &^ (PageSize - 1), nil
}

// mmap maps n bytes of private anonymous memory with prot, not counted
// against the commit limit, PageSize aligned.
func mmap(n uintptr, prot int) (unsafe.Pointer, error) {
	const flags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_NORESERVE
	if !simulating() {
		return unix.MmapPtr(-1, 0, nil, n, prot, flags)
	}
	n = (n + PageSize - 1) &^ (PageSize - 1)
	slack := PageSize - hostPage // the host aligns to hostPage
	p, err := unix.MmapPtr(-1, 0, nil, n+slack, prot, flags)
	if err != nil {
		return nil, err
	}
	head := -uintptr(p) & (PageSize - 1)
	if head > 0 {
		unix.MunmapPtr(p, head)
	}
	if tail := slack - head; tail > 0 {
		unix.MunmapPtr(unsafe.Add(p, head+n), tail)
	}
	return unsafe.Add(p, head), nil
}

// mincore fills vec with one byte per page of [p, p+n), whose low bit is
// set when the page is resident.
func mincore(p unsafe.Pointer, n uintptr, vec []byte) error {
	if !simulating() {
		_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(p), n, uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
		if e != 0 {
			return e
		}
		return nil
	}
	if uintptr(p)&(PageSize-1) != 0 {
		return unix.EINVAL
	}
	per := PageSize / hostPage
	var host [1024]byte
	np := (n + PageSize - 1) / PageSize
	clear(vec[:np])
	for i := uintptr(0); i < np; {
		k := min(np-i, uintptr(len(host))/per) // simulated pages in this call
		_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(p)+i*PageSize, k*PageSize, uintptr(unsafe.Pointer(&host[0])))
		if e != 0 {
			return e
		}
		for j, v := range host[:k*per] {
			vec[i+uintptr(j)/per] |= v & 1
		}
		i += k
	}
	return nil
}
