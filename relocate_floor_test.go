package offheap

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/offheap/offheap/internal/osmem"
)

// BenchmarkRelocateFloor sets a Relocate pass's cost over moving the same
// survivors by hand beside the floor of each: the least code that does the
// same job over memory laid out as the heap lays it out (its size classes
// and spans, blocks carved in order, nine in ten freed at random onto their
// spans' lists), with no lock, census, check or page heap. The floor's pass
// moves a survivor of a span at most half live into a hole of the fullest
// span of its class, as Relocate does; its hand arm takes the last block a
// hand move freed in the class, as a magazine gives it, or else a hole of
// the survivor's own span. The null arms, read-heap and read-floor, load
// the word of each survivor that Relocate loads first, and nothing else:
// what the survivors' memory costs a loop that does no other work; the
// relocate-all arm runs the heap's pass through RelocateAll, a thousand
// survivors a call. Each iteration builds the seven heaps alike, then times
// the arms in an order that turns with the iteration. It reports each
// arm's ns per block moved (per block read, for the null arms) and three
// ratios: relocate-all/by-hand is the frag shape's pass-cost figure,
// relocate/by-hand the same pass with a Relocate per block, and
// floor/floor-hand what the two jobs cost with nothing of offheap around
// them (docs/DESIGN.md, "A pass is bound by memory latency").
func BenchmarkRelocateFloor(b *testing.B) {
	if buildChecked {
		b.Skip("checked build: every Relocate moves, through the checker")
	}
	const values = 200_000
	arms := [...]string{"relocate", "by-hand", "read-heap", "floor", "floor-hand", "read-floor", "relocate-all"}
	var el [len(arms)]time.Duration
	var moved [len(arms)]int
	b.StopTimer() // the builds are most of an iteration: each arm times itself
	for i := range b.N {
		var heaps [4]*Heap
		var keeps [4][][]byte
		var floors [3]*floorHeap
		for k := range heaps {
			h, err := NewHeap(unprofiled(Options{}))
			if err != nil {
				b.Fatal(err)
			}
			heaps[k], keeps[k] = h, evictNineInTen(h, values, uint64(i))
			if k < len(floors) {
				floors[k] = newFloorHeap(b, values, uint64(i))
			}
		}
		for j := range arms {
			arm := (i + j) % len(arms)
			t0 := time.Now()
			switch arm {
			case 0:
				moved[arm] += relocateEach(heaps[0], keeps[0])
			case 1:
				moved[arm] += moveByHand(heaps[1], keeps[1])
			case 2:
				for _, v := range keeps[2] {
					sinkWord += *word(addrOf(v) + 8)
				}
				moved[arm] += len(keeps[2])
			case 3:
				moved[arm] += floors[0].pass()
			case 4:
				moved[arm] += floors[1].byHand()
			case 5:
				for _, v := range floors[2].keep {
					sinkWord += *word(v.addr + 8)
				}
				moved[arm] += len(floors[2].keep)
			case 6:
				moved[arm] += relocateBatches(heaps[3], keeps[3])
			}
			el[arm] += time.Since(t0)
		}
		for _, h := range heaps {
			h.Close()
		}
		for _, f := range floors {
			f.release(b)
		}
	}
	per := func(arm int) float64 { return float64(el[arm].Nanoseconds()) / float64(max(moved[arm], 1)) }
	for arm, name := range arms {
		b.ReportMetric(per(arm), name+"-ns/block")
	}
	b.ReportMetric(per(0)/per(1), "relocate/by-hand")
	b.ReportMetric(per(6)/per(1), "relocate-all/by-hand")
	b.ReportMetric(per(3)/per(4), "floor/floor-hand")
}

// floorHeap is the floor arms' heap: spans of the heap's classes in one
// mapping, each with a free list linked through its blocks' first words.
type floorHeap struct {
	mem     unsafe.Pointer
	size    uintptr
	spans   []floorSpan
	pages   []int32               // the span of each page, as the pagemap has it
	byClass [numClasses][]int32   // each class's spans
	keep    []floorValue          // the survivors, in the order allocated
	target  [numClasses]int32     // the span the pass fills (-1: none chosen)
	stack   [numClasses][]uintptr // the hand arm's freed blocks, as a magazine holds them
}

// floorSpan is one span of a floorHeap: live blocks, and its free list's
// first block (0: empty).
type floorSpan struct {
	start     uintptr
	free      uintptr
	live, cap int32
}

// floorValue is a survivor: its address and class.
type floorValue struct {
	addr  uintptr
	class uint8
}

// newFloorHeap lays out the values evictNineInTen allocates from seed,
// each class's blocks carved in order from spans of the heap's size, and
// frees the same nine in ten.
func newFloorHeap(b *testing.B, values int, seed uint64) *floorHeap {
	rng := rand.New(rand.NewPCG(seed, 5))
	// A value takes at most 512 bytes of a span, and each class's last
	// span at most a span's pages: 1 KiB a value covers both from some
	// thousands of values up.
	f := &floorHeap{size: uintptr(values) * 1024}
	var err error
	if f.mem, err = osmem.Map(f.size); err != nil {
		b.Fatal(err)
	}
	next := uintptr(f.mem)
	cur := [numClasses]int32{}
	for c := range cur {
		cur[c], f.target[c] = -1, -1
	}
	all := make([]floorValue, values)
	spanOf := make([]int32, values)
	for i := range all {
		c := sizeClass(16 + rng.IntN(497))
		s := cur[c]
		if s < 0 || f.spans[s].live == f.spans[s].cap {
			f.spans = append(f.spans, floorSpan{start: next, cap: int32(classBlocks[c])})
			next += uintptr(classPages[c]) * pageSize
			s = int32(len(f.spans) - 1)
			for range classPages[c] {
				f.pages = append(f.pages, s)
			}
			cur[c] = s
			f.byClass[c] = append(f.byClass[c], s)
		}
		sp := &f.spans[s]
		a := sp.start + uintptr(sp.live)*uintptr(classSize[c])
		sp.live++
		*(*byte)(ptr(a)) = byte(i)
		all[i], spanOf[i] = floorValue{a, c}, s
	}
	for i, v := range all {
		if rng.IntN(10) == 0 {
			f.keep = append(f.keep, v)
		} else {
			sp := &f.spans[spanOf[i]]
			*word(v.addr) = sp.free
			sp.free = v.addr
			sp.live--
		}
	}
	return f
}

// span is the span that holds a.
func (f *floorHeap) span(a uintptr) *floorSpan {
	return &f.spans[f.pages[(a-uintptr(f.mem))>>pageShift]]
}

// take pops a hole of s.
func (s *floorSpan) take() uintptr {
	a := s.free
	s.free = *word(a)
	s.live++
	return a
}

// put pushes a onto s's free list.
func (s *floorSpan) put(a uintptr) {
	*word(a) = s.free
	s.free = a
	s.live--
}

// pass is the floor of a Relocate pass: every survivor of a span at most
// half live moves into a hole of the fullest span of its class that has
// one, when that span holds more live blocks than the survivor's.
func (f *floorHeap) pass() (moved int) {
	for k, v := range f.keep {
		c := v.class
		s := f.span(v.addr)
		if s.live > s.cap/2 {
			continue
		}
		t := f.target[c]
		if t < 0 || f.spans[t].free == 0 {
			t = -1
			for _, id := range f.byClass[c] {
				if sp := &f.spans[id]; sp.free != 0 && (t < 0 || sp.live > f.spans[t].live) {
					t = id
				}
			}
			f.target[c] = t
		}
		if t < 0 || &f.spans[t] == s || f.spans[t].live <= s.live {
			continue
		}
		n := classSize[c]
		na := f.spans[t].take()
		copy(bytesAt(na, int(n)), bytesAt(v.addr, int(n)))
		s.put(v.addr)
		f.keep[k].addr = na
		moved++
	}
	return moved
}

// byHand is the floor of moving by hand: a survivor moves into the block
// the last move of its class freed, or else into a hole of its own span.
func (f *floorHeap) byHand() (moved int) {
	for k, v := range f.keep {
		c := v.class
		var na uintptr
		if st := f.stack[c]; len(st) > 0 {
			na = st[len(st)-1]
			f.stack[c] = st[:len(st)-1]
		} else if s := f.span(v.addr); s.free != 0 {
			na = s.take()
		} else {
			continue
		}
		n := classSize[c]
		copy(bytesAt(na, int(n)), bytesAt(v.addr, int(n)))
		f.stack[c] = append(f.stack[c], v.addr)
		f.keep[k].addr = na
		moved++
	}
	return moved
}

// release unmaps the floor heap's memory.
func (f *floorHeap) release(b *testing.B) {
	if err := osmem.Unmap(f.mem, f.size); err != nil {
		b.Fatal(err)
	}
}

// sinkWord keeps the null arms' loads.
var sinkWord uintptr
