package offheap

import (
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestCentralLayout: no class's central lock shares a cache line with
// another class's state, in the layout the compiler gives Heap.central and
// in a Heap NewHeap made. Before the fix a central was 200 bytes (a
// trailing zero-length pad costs a word), and 72 of 97 classes' locks sat
// on the line of the previous class's census.
func TestCentralLayout(t *testing.T) {
	const line = 64
	size := unsafe.Sizeof(central{})
	if size%line != 0 {
		t.Errorf("a central is %d bytes, not a whole number of %d-byte lines", size, line)
	}
	base := unsafe.Offsetof(Heap{}.central)
	if base%line != 0 {
		t.Errorf("Heap.central starts %d bytes into a line", base%line)
	}
	lists := unsafe.Offsetof(central{}.centralLists)
	mu := lists + unsafe.Offsetof(centralLists{}.mu)
	muSize := unsafe.Sizeof(centralLists{}.mu)
	state := unsafe.Sizeof(centralLists{})
	shared := 0
	for i := range uintptr(numClasses) {
		lo, hi := (base+i*size+mu)/line, (base+i*size+mu+muSize-1)/line // the lock's lines
		for j := range uintptr(numClasses) {
			if j == i {
				continue
			}
			slo, shi := (base+j*size+lists)/line, (base+j*size+lists+state-1)/line // class j's state
			if lo <= shi && slo <= hi {
				shared++
				if shared <= 3 {
					t.Errorf("class %d's lock (bytes %d-%d of Heap) shares a line with class %d's state (bytes %d-%d)",
						i, base+i*size+mu, base+i*size+mu+muSize-1, j, base+j*size+lists, base+j*size+lists+state-1)
				}
				break
			}
		}
	}
	if shared > 0 {
		t.Errorf("%d of %d classes' locks share a line with another class's state", shared, numClasses)
	}
	// The Go allocator places a Heap, larger than a page, on a page: the
	// offsets above are the addresses' offsets in a line.
	h := newTestHeap(t, Options{})
	if a := uintptr(unsafe.Pointer(&h.central[0])); a%line != 0 {
		t.Errorf("h.central[0] at %#x, %d bytes into a line", a, a%line)
	}
}

// BenchmarkCentralNeighbours: two goroutines, each an Alloc+Free pair of
// its own class through the central lists (magazines off), the two classes
// next to each other in Heap.central (arm=neighbours: classes 14 and 15,
// where a 200-byte central put class 15's lock on the line of class 14's
// census) or far apart (arm=apart: classes 14 and 40, the control, which
// no layout puts on one line).
func BenchmarkCentralNeighbours(b *testing.B) {
	for _, arm := range []struct {
		name   string
		cl, c2 int
	}{{"neighbours", 14, 15}, {"apart", 14, 40}} {
		b.Run("arm="+arm.name, func(b *testing.B) {
			h := newTestHeap(b, Options{MagazineDepth: -1, ProfileBytes: -1})
			sizes := [2]int{int(classSize[arm.cl]), int(classSize[arm.c2])}
			var next atomic.Uint32
			b.RunParallel(func(pb *testing.PB) {
				n := sizes[next.Add(1)%2]
				for pb.Next() {
					h.Free(h.AllocUnzeroed(n))
				}
			})
		})
	}
}
