//go:build linux

package offheap

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of [p, p+n) that are in memory.
func resident(t *testing.T, p unsafe.Pointer, n uintptr) int {
	t.Helper()
	vec := make([]byte, (n+osPageSize-1)/osPageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(p), n, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal("mincore:", errno)
	}
	k := 0
	for _, v := range vec {
		k += int(v & 1)
	}
	return k
}

var osPageSize = uintptr(unix.Getpagesize())

// TestCheckedRecordsReleased: the record table's pages are committed as
// small blocks are allocated and go back to the system with the pages they
// describe. Positive control: without the page heap releasing them
// (pageheap.Heap.Shadow), the records of 20000 freed blocks stayed resident after
// Trim and this test failed.
func TestCheckedRecordsReleased(t *testing.T) {
	h := checkedHeap(t, Options{})
	var bs [][]byte
	for range 20000 {
		bs = append(bs, h.Alloc(20))
	}
	lo, hi := addrOf(bs[0]), addrOf(bs[0])
	for _, b := range bs {
		lo, hi = min(lo, addrOf(b)), max(hi, addrOf(b))
	}
	from := (lo - h.base) &^ (pageSize - 1)
	n := (hi - h.base) - from + 1
	table := unsafe.Add(h.chk.table, from)
	if k := resident(t, table, n); k == 0 {
		t.Fatalf("no page of records resident for %d live blocks", len(bs))
	}
	for _, b := range bs {
		h.Free(b)
	}
	h.Trim()
	if k := resident(t, table, n); k != 0 {
		t.Fatalf("%d pages of records still resident after Trim", k)
	}
	closeClean(t, h)
}
