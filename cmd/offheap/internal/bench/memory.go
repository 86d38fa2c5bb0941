package bench

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Memory figures: an arm's resident bytes over the bytes a shape holds live,
// for the arms that can say what is resident.

// MetricResident is the metric (and benchmark unit) of resident bytes over
// live bytes that the churn shapes report, read once the shape's steady
// state is reached, with its live set held.
const MetricResident = "res/live"

// Resident is implemented by arms whose own resident memory can be read:
// offheap's heaps (Heap.ResidentBytes, which Trim gives the free memory
// they keep back first) and the C allocators (their own statistics, after
// a purge; each arm's doc says what it counts).
type Resident interface {
	ResidentBytes() (uint64, error)
	Trim()
}

// GoHeap is implemented by arms whose blocks are objects of the Go heap
// (make): their resident memory is the Go heap's, read after a collection
// and debug.FreeOSMemory.
type GoHeap interface {
	GoHeap()
}

// Measurable reports whether a MemoryProbe can read a's memory: whether a
// can take part in a memory shape.
func Measurable(a Allocator) bool {
	switch a.(type) {
	case Resident, GoHeap:
		return true
	}
	return false
}

// MemoryProbe reads one arm's resident memory against a shape's live bytes.
type MemoryProbe struct {
	a      Allocator
	settle bool   // give free memory back before each reading
	base   uint64 // a Go heap arm's heap bytes when the probe began
}

// NewMemoryProbe begins reading a's memory. A Go heap arm's memory is its
// objects and the free room in their spans, read after a collection: what
// debug.FreeOSMemory would leave resident, since it returns the free spans
// (the offheap arms return their free pages at once, ReleaseDelay -1).
// With settle, every reading first gives back the free memory the arm
// keeps, the way the arm does (an offheap heap's Trim, which empties its
// magazines and depots; FreeOSMemory), as a program that reports its memory
// after a phase would; without, an offheap heap is read as the shape left
// it, its magazines' free blocks included, and make after a plain
// collection, so that the next trial starts from the state this one left
// (a Trim would start it with empty magazines, FreeOSMemory with pages to
// fault in again). For a Go heap arm the probe reads the Go heap as it is
// now: what the shape already made (its index of slices, say) is left out
// of every later reading, as it is for an offheap arm, whose heap holds
// only the values. Make it after the shape's own Go data and before its
// values.
func NewMemoryProbe(a Allocator, settle bool) *MemoryProbe {
	p := &MemoryProbe{a: a, settle: settle}
	if _, ok := a.(GoHeap); ok {
		runtime.GC()
		p.base = goHeapBytes()
	}
	return p
}

// Resident returns the arm's resident bytes, and false for an arm it
// cannot read.
func (p *MemoryProbe) Resident() (uint64, bool) {
	switch a := p.a.(type) {
	case Resident:
		if p.settle {
			a.Trim()
		}
		n, err := a.ResidentBytes()
		return n, err == nil
	case GoHeap:
		if p.settle {
			debug.FreeOSMemory() // a collection first
		} else {
			runtime.GC()
		}
		n := goHeapBytes()
		return n - min(n, p.base), true
	}
	return 0, false
}

// Ratio is Resident over live bytes, and false for an arm it cannot read.
func (p *MemoryProbe) Ratio(live int64) (float64, bool) {
	n, ok := p.Resident()
	if !ok || live <= 0 {
		return 0, false
	}
	return float64(n) / float64(live), true
}

// Record sets m[name] to Ratio(live) when the arm can be read.
func (p *MemoryProbe) Record(m map[string]float64, name string, live int64) {
	if v, ok := p.Ratio(live); ok {
		m[name] = v
	}
}

// goHeapBytes is the Go heap's memory in its objects' spans: the objects'
// bytes and the free room in those spans. Free spans are left out: a
// collection followed by FreeOSMemory returns them.
func goHeapBytes() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	metrics.Read(s)
	var n uint64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			n += x.Value.Uint64()
		}
	}
	return n
}

// Touch writes every element of s's capacity, so that its pages are
// resident. A shape whose arms' memory may be read from the process's RSS
// (RSSBeyondGo) touches the Go data it makes before the readings: the Go
// runtime counts a fresh allocation as its memory before its pages are
// touched, and RSSBeyondGo takes it off RSS as if they were, which would
// take the untouched part off the arm's figure.
func Touch[T any](s []T) { clear(s[:cap(s)]) }

// RSSBeyondGo is the process's resident memory (RSS) less the Go runtime's
// memory that is not released to the OS: the memory of C allocators and of
// the threads' stacks, for an arm with no count of its own (glibc's
// malloc). Go's part is what the runtime has mapped and not released
// (runtime/metrics), which counts its free pages as resident: read it
// after debug.FreeOSMemory.
func RSSBeyondGo() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	goMem := s[0].Value.Uint64() - s[1].Value.Uint64()
	rss := RSS()
	return rss - min(rss, goMem)
}
