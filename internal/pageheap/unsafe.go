package pageheap

import "unsafe"

// ptr turns an address of the page heap's memory, mapped with mmap and
// never moved or scanned by the garbage collector, into a pointer. It
// reinterprets the word, as the offheap package's ptr does and for its
// reasons: the address did not come from a Go pointer in the same
// expression, which is the only conversion go vet and checkptr accept.
func ptr(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}
