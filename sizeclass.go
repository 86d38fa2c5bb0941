package offheap

import (
	"math"
	"math/bits"

	"github.com/offheap/offheap/internal/pageheap"
)

//go:generate go run ./internal/sizeclassgen

// The page heap's page, which classes, spans, runs and the pagemap count
// in, under the names every layer above it reads.
const (
	pageShift = pageheap.PageShift
	pageSize  = pageheap.PageSize
)

// The size-class table itself is generated into sizeclass_table.go by
// internal/sizeclassgen, whose top comment explains the classes; the table's
// comment lists each class's waste.

// sizeClass is the class of a small request of n bytes, 0 < n <= maxSmall.
func sizeClass(n int) uint8 {
	if n <= 1024 {
		return sizeToClass8[(n+7)>>3]
	}
	return sizeToClass128[(n-1024+127)>>7]
}

// pagesFor is the number of pages n bytes need, or false if that overflows:
// the rounding of a request over maxSmall.
func pagesFor(n int) (uint32, bool) {
	p := (uint64(n) + pageSize - 1) >> pageShift
	return uint32(p), p <= math.MaxUint32 && bits.Len64(p) < 32
}

// roundedSize is the size of the block an allocation of n bytes takes in a
// fast heap: its size class's, or whole pages. The profile counts a sample
// at it, as Stats counts every block.
func roundedSize(n int) int {
	if n <= maxSmall {
		return int(classSize[sizeClass(n)])
	}
	np, _ := pagesFor(n)
	return int(np) << pageShift
}

// The spans of this process: the span tier is the OS page:
// tier 0 up to 8 KiB, 1 for 16 KiB, 2 for 32 KiB, 3 for 64 KiB and above.
var (
	spanTier = min(bits.TrailingZeros32(pageheap.OSPagePages), spanTiers-1)
	// classPages is the pages of each class's span: at least an OS page,
	// so that a span emptied goes back to the OS without its neighbours.
	classPages = tierPages[spanTier]
	// classBlocks is how many blocks each class's span holds.
	classBlocks = func() (t [numClasses]uint32) {
		for c := 1; c < numClasses; c++ {
			t[c] = uint32(classPages[c]) * pageSize / classSize[c]
		}
		return t
	}()
)

// keepEmptyPages is how many pages of empty spans a class keeps for reuse
// before it gives spans back to the page heap: without it a class that
// allocates and frees one block would make and unmake a span each time, and
// with the small spans of 4 KiB OS pages one span's worth is too few to stop
// it (docs/DESIGN.md, "Span sizes").
const keepEmptyPages = 8

// keepEmpty is how many empty spans each class keeps: keepEmptyPages'
// worth, and at least one.
var keepEmpty = func() (t [numClasses]int) {
	for c := 1; c < numClasses; c++ {
		t[c] = max(1, keepEmptyPages/int(classPages[c]))
	}
	return t
}()

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

// isSmall reports whether class c is a small class (a span's).
func isSmall(c uint8) bool { return c-1 < numClasses-1 }

// blockIn locates address a in the span of a small class: e is the pagemap
// word of a's page and ci its class's info. It returns the index in the span
// of the block that holds a, and how many bytes into that block a is: a
// starts a block exactly when into is 0 and index is below ci.blocks (a
// span's tail past its last block holds none). Regions are pageSize
// aligned, so a's offset in its page is its low bits, and bits 8-31 of e
// are the page's index in its span; the division is divMul's multiply.
// Every caller that turns an address into a block start uses it, Free's
// fast path included, where it inlines to the same instructions.
func blockIn(a uintptr, e uint64, ci *classInfo) (index, into uint64) {
	o := uint64(a&(pageSize-1)) | uint64(pageheap.WordIndex(e))<<pageShift
	index = o * ci.divMul >> 40
	return index, o - index*uint64(ci.size)
}

// A region's guards are at least the largest class (internal/pageheap/region_os.go).
var _ [pageheap.RegionGuard - maxSmall]struct{}

// maxAlloc bounds a single allocation's size.
const maxAlloc = min(1<<46, math.MaxInt)
