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

// blockIn locates address a in the span of a small class: e is the pagemap
// word of a's page and ci its class's info. It returns the index in the span
// of the block that holds a, and how many bytes into that block a is: a
// starts a block exactly when into is 0 and index is below ci.blocks (a
// span's tail past its last block holds none). Regions are pageSize
// aligned, so a's offset in its page is its low bits, and bits 8-31 of e
// are the page's index in its span (pages.go); the division is divMul's
// multiply. Every caller that turns an address into a block start uses it,
// Free's fast path included, where it inlines to the same instructions.
func blockIn(a uintptr, e uint64, ci *classInfo) (index, into uint64) {
	o := uint64(a&(pageSize-1)) | uint64(uint32(e)>>8)<<pageShift
	index = o * ci.divMul >> 40
	return index, o - index*uint64(ci.size)
}

// blockStart reports whether a starts a block of the small class whose
// info is ci, e being the pagemap word of a's page (blockIn): the test
// every Free makes, Heap.Free's and Cache.Free's fast paths included. It
// is nosplit, as they are, and inlines into them.
//
//go:nosplit
func blockStart(a uintptr, e uint64, ci *classInfo) bool {
	q, into := blockIn(a, e, ci)
	return into == 0 && q < uint64(ci.blocks)
}
