package offheap

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// point is a pointer-free element with more than one field and an odd size.
type point struct {
	X, Y int32
	Tag  [5]byte
}

// TestReallocSliceModel resizes typed slices at random against a Go slice
// that models them: after every step the elements kept are the model's,
// the new ones are zero (even where the block held other values, and where
// the slice was shortened before: s[:k]), len and cap are n, and at the end
// everything is freed. Sizes cross classes and go into large blocks; fast,
// checked and magazine-less heaps.
func TestReallocSliceModel(t *testing.T) {
	for _, arm := range refArms[:3] {
		t.Run(arm.name, func(t *testing.T) {
			h := newTestHeap(t, arm.opts)
			rng := rand.New(rand.NewPCG(7, uint64(len(arm.name))))
			var s []point
			var model []point
			for step := range 600 {
				var n int
				switch rng.IntN(6) {
				case 0:
					n = 0
				case 1:
					n = rng.IntN(20_000) // large blocks
				default:
					n = rng.IntN(300)
				}
				if len(s) > 0 && rng.IntN(4) == 0 {
					k := rng.IntN(len(s)) // a shorter view of the same block
					s, model = s[:k], model[:k]
				}
				// Scribble on the free part of the capacity: none of it may
				// come back.
				if c := cap(s); c > len(s) {
					for i, full := len(s), s[:c]; i < c; i++ {
						full[i] = point{X: -1, Y: int32(step), Tag: [5]byte{9, 9, 9, 9, 9}}
					}
				}
				s = ReallocSlice(h, s, n)
				if len(s) != n || cap(s) != n {
					t.Fatalf("step %d: ReallocSlice to %d: len %d cap %d", step, n, len(s), cap(s))
				}
				keep := min(len(model), n)
				model = append(model[:keep:keep], make([]point, n-keep)...)
				if !slices.Equal(s, model) {
					i := 0
					for s[i] == model[i] {
						i++
					}
					t.Fatalf("step %d: to %d elements: element %d is %+v, want %+v", step, n, i, s[i], model[i])
				}
				for i := range s {
					s[i] = point{X: int32(i), Y: int32(step), Tag: [5]byte{byte(i)}}
					model[i] = s[i]
				}
			}
			FreeSlice(h, s)
			if st := h.Stats(); st.LiveBlocks != 0 {
				t.Fatalf("%d live blocks at the end", st.LiveBlocks)
			}
		})
	}
}

// TestReallocSliceEdges: nil, MakeSlice(0), zero-size types, shrinking to
// 0, and the same memory back when the class allows.
func TestReallocSliceEdges(t *testing.T) {
	// Unprofiled: a sampled block always moves, and would fail the
	// same-class check below now and then.
	h := newTestHeap(t, unprofiled(Options{}))
	s := ReallocSlice[uint64](h, nil, 5)
	if len(s) != 5 || s[4] != 0 {
		t.Fatalf("ReallocSlice(nil, 5) = %v", s)
	}
	s[4] = 44
	if e := ReallocSlice(h, s, 0); e == nil || len(e) != 0 {
		t.Fatalf("ReallocSlice(s, 0) = %v", e)
	}
	if st := h.Stats(); st.LiveBlocks != 0 {
		t.Fatalf("ReallocSlice(s, 0) left %d live blocks", st.LiveBlocks)
	}
	e := ReallocSlice(h, MakeSlice[uint64](h, 0), 3)
	if len(e) != 3 || e[0] != 0 {
		t.Fatalf("ReallocSlice(MakeSlice(0), 3) = %v", e)
	}
	if !buildChecked { // a checked heap always moves
		same := ReallocSlice(h, e, 4) // 24 -> 32 bytes: the same class
		if &same[0] != &e[0] || same[3] != 0 {
			t.Fatalf("ReallocSlice within a class moved, or did not zero: %v", same)
		}
		e = same
	}
	FreeSlice(h, e)
	z := ReallocSlice(h, MakeSlice[struct{}](h, 3), 10)
	if len(z) != 10 {
		t.Fatalf("zero-size elements: len %d", len(z))
	}
	if st := h.Stats(); st.LiveBlocks != 0 || st.Allocs != 2 {
		t.Fatalf("after freeing: %d live blocks, %d allocs", st.LiveBlocks, st.Allocs)
	}
}

// TestReallocSliceRefuses: pointerful element types, negative and too
// large lengths, and a slice that does not start a block are refused with
// a message that names the problem, and the slice is left as it was.
func TestReallocSliceRefuses(t *testing.T) {
	h := newTestHeap(t, Options{})
	s := MakeSlice[int64](h, 10)
	for i := range s {
		s[i] = int64(i) + 1
	}
	u := MakeSlice[[16]byte](h, 2)
	type refusal struct {
		want string
		f    func()
	}
	var past []refusal // past what the heap's address space holds (16 TiB), below maxAlloc
	if l40 := uint64(1) << 40; l40*2 <= math.MaxInt {
		past = []refusal{
			{"ReallocSlice[int64]: length 2199023255552 is too large", func() { ReallocSlice(h, s, int(l40*2)) }},
			{"ReallocSlice[[16]uint8]: length 1099511627776 is too large", func() { ReallocSlice(h, u, int(l40)) }},
		}
	}
	for _, c := range append([]refusal{
		{"Go pointers", func() { ReallocSlice[*int](h, nil, 3) }},
		{"ReallocSlice[string]", func() { ReallocSlice[string](h, nil, 3) }},
		{"negative length", func() { ReallocSlice(h, s, -1) }},
		{"too large", func() { ReallocSlice(h, s, math.MaxInt/4) }},
		{"not the start of a block", func() { ReallocSlice(h, s[1:], 20) }},
	}, past...) {
		if msg := mustPanic(t, c.f); !strings.Contains(msg, c.want) {
			t.Errorf("panic %q, want it to contain %q", msg, c.want)
		}
	}
	for i, x := range s {
		if x != int64(i)+1 {
			t.Fatalf("element %d is %d after the refusals", i, x)
		}
	}
	FreeSlice(h, s)
	FreeSlice(h, u)
	if st := h.Stats(); st.LiveBlocks != 0 {
		t.Fatalf("refused calls left %d live blocks", st.LiveBlocks)
	}
}
