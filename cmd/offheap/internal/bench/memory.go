package bench

import (
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
// offheap's heaps (Heap.ResidentBytes), which Trim gives the free memory
// they keep back first.
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

// MemoryProbe reads one arm's resident memory against a shape's live bytes.
type MemoryProbe struct {
	a    Allocator
	base uint64 // a Go heap arm's heap bytes when the probe began
}

// NewMemoryProbe begins reading a's memory. For a Go heap arm it reads the
// Go heap as it is now, after a collection: what the shape already made (its
// index of slices, say) is left out of every later reading, as it is for an
// offheap arm, whose heap holds only the values. Make it after the shape's
// own Go data and before its values.
func NewMemoryProbe(a Allocator) *MemoryProbe {
	p := &MemoryProbe{a: a}
	if _, ok := a.(GoHeap); ok {
		p.base = goHeapResident()
	}
	return p
}

// Resident gives the arm's free memory back the way the arm does (Trim; a
// collection and FreeOSMemory) and returns its resident bytes, and false
// for an arm it cannot read.
func (p *MemoryProbe) Resident() (uint64, bool) {
	switch a := p.a.(type) {
	case Resident:
		a.Trim()
		n, err := a.ResidentBytes()
		return n, err == nil
	case GoHeap:
		n := goHeapResident()
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

// goHeapResident is the Go heap's memory in use by spans, after a
// collection and FreeOSMemory: the bytes of its objects, the free room in
// their spans, and the free spans not yet returned to the system.
func goHeapResident() uint64 {
	debug.FreeOSMemory() // a collection first

	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
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
