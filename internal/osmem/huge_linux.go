//go:build linux && (amd64 || arm64)

package osmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HugePageSize is the size of the kernel's transparent huge pages (its PMD
// size), or 0 if the kernel has none.
var HugePageSize = hugePageSize()

func hugePageSize() uintptr {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0
	}
	return uintptr(n)
}

// Collapse makes the pages of [p, p+n), HugePageSize aligned, transparent
// huge pages now, copying the small pages into them (madvise MADV_COLLAPSE,
// Linux 6.1 and later): synchronous, in the calling thread, which pays for
// any compaction the kernel does to find a huge page. Pages not in memory
// are filled with zeros.
func Collapse(p unsafe.Pointer, n uintptr) error {
	if err := unix.Madvise(unsafe.Slice((*byte)(p), n), unix.MADV_COLLAPSE); err != nil {
		return fmt.Errorf("offheap: madvise(MADV_COLLAPSE) %#x+%d: %w", uintptr(p), n, err)
	}
	return nil
}

// AnonHugeBytes returns the bytes in transparent huge pages of the
// mappings that overlap any of the ranges [r[0], r[1]), from
// /proc/self/smaps: the whole of each such mapping is counted. The kernel
// walks the page tables of every mapping of the process to write the file,
// so the call costs in proportion to the process's mapped memory (about a
// millisecond per GiB resident).
func AnonHugeBytes(ranges [][2]uintptr) (uint64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("offheap: huge pages: %w", err)
	}
	defer f.Close()
	var total uint64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if lo, hi, ok := mappingRange(line); ok {
			in = false
			for _, r := range ranges {
				if lo < r[1] && r[0] < hi {
					in = true
					break
				}
			}
			continue
		}
		if rest, ok := bytes.CutPrefix(line, []byte("AnonHugePages:")); ok && in {
			kb, err := strconv.ParseUint(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("offheap: huge pages: /proc/self/smaps: %q: %w", line, err)
			}
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("offheap: huge pages: /proc/self/smaps: %w", err)
	}
	return total, nil
}

// mappingRange parses the "lo-hi perms ..." line that starts a mapping's
// entry in smaps.
func mappingRange(line []byte) (lo, hi uintptr, ok bool) {
	dash := bytes.IndexByte(line, '-')
	sp := bytes.IndexByte(line, ' ')
	if dash <= 0 || sp <= dash {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(string(line[:dash]), 16, 64)
	h, err2 := strconv.ParseUint(string(line[dash+1:sp]), 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
