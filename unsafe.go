package offheap

import "unsafe"

// The few conversions between addresses and pointers live here. Every address
// they see is inside memory this package mapped with mmap: the garbage
// collector neither scans nor moves it, so an address held as a uintptr stays
// valid for as long as the mapping does.

// ptr turns an address of off-heap memory into a pointer. It reinterprets the
// word rather than converting it, because the address did not come from a Go
// pointer in the same expression (the only conversion go vet and checkptr
// accept); for memory outside the Go heap that rule guards nothing.
func ptr(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// bytesAt is the n bytes at addr.
func bytesAt(addr uintptr, n int) []byte {
	return unsafe.Slice((*byte)(ptr(addr)), n)
}

// addrOf is the address of b's first byte.
func addrOf(b []byte) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// word is the machine word stored at addr: the link of a free block.
func word(addr uintptr) *uintptr {
	return (*uintptr)(ptr(addr))
}
