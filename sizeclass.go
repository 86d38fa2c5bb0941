package offheap

//go:generate go run sizeclass_gen.go

// The size-class table itself is generated into sizeclass_table.go by
// sizeclass_gen.go, whose top comment explains the classes; the table's
// comment lists each class's waste.

// sizeClass is the class of a small request of n bytes, 0 < n <= maxSmall.
func sizeClass(n int) uint8 {
	if n <= 1024 {
		return sizeToClass8[(n+7)>>3]
	}
	return sizeToClass128[(n-1024+127)>>7]
}

// classInfo is what Free's fast path needs of a class, on one cache line
// with three other classes' instead of spread over three tables.
type classInfo struct {
	size, blocks uint32
	divMul       uint64 // off/size == off*divMul>>40 for every offset in a span
}

var classInfos = func() (t [numClasses]classInfo) {
	for c := range t {
		t[c] = classInfo{classSize[c], classBlocks[c], classDivMul[c]}
	}
	return t
}()
