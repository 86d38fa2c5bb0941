package offheap

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// FuzzHeap replays an operation sequence decoded from the input against the
// heap and against a reference model, a map of live blocks, and checks after
// every step that the two agree: every live block keeps its pattern, no two
// live blocks overlap, Realloc and ReallocUnzeroed keep what they must, and
// the census counts what the model did. Bit 5 of an operation's byte sends
// a small Alloc, a Free or a check through a Local of the heap (a check
// then flushes it); bit 6 makes a resize ReallocUnzeroed; bit 7 makes a
// resize a relocation of up to four live blocks, by RelocateAll (with bit
// 6, by Relocate one at a time), which must keep their bytes.
// A check's byte from 0xe0 up is a write after free instead: an attacker's
// word written into a small block freed earlier (writeFreed), after which
// an Alloc may panic with the corruption it finds (freelist.go), and no
// Alloc may return memory outside the heap or overlapping a live block.
func FuzzHeap(f *testing.F) {
	f.Add([]byte{0, 64, 0, 0, 1, 0, 0, 0}, int8(0))
	f.Add([]byte{0, 1, 0, 0, 0, 0xff, 0x7f, 0, 1, 1, 0, 0, 2, 0, 0, 0}, int8(-1))
	f.Add([]byte{0, 0, 0x80, 0, 0, 0, 0x80, 1, 1, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0}, int8(1))
	f.Add(make([]byte, 64), int8(4))
	f.Add([]byte{0x23, 64, 0, 0, 0x23, 1, 0, 0, 0x25, 0, 0, 0, 0x21, 0, 0, 0, 0x25, 0, 0, 0}, int8(0)) // through a Local
	// Writes after free (0xe4, 0xe9, ...: op%5 == 3) between frees and allocs.
	f.Add([]byte{0, 64, 0, 0, 0, 64, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0xe4, 0, 0, 0, 0xe9, 1, 0, 0, 0, 64, 0, 0, 0, 64, 0, 0, 3, 0, 0, 0}, int8(-1))
	f.Add([]byte{0, 16, 0, 0, 2, 0, 0, 0, 0xee, 0x12, 0, 0, 0, 16, 0, 0, 0xf3, 0x23, 0, 0, 0, 16, 0, 0, 3, 0, 0, 0}, int8(1))
	// Relocations (0x86: RelocateAll; 0xc2, with bit 6: Relocate): fifteen
	// blocks of 3000 bytes, five to a span, the first span's first four
	// freed and one more, then both ways over the lowest blocks.
	var reloc []byte
	for range 15 {
		reloc = append(reloc, 0, 0xb8, 0x0b, 0) // Alloc(3000)
	}
	for _, i := range []byte{0, 0, 0, 0, 5} {
		reloc = append(reloc, 2, i, 0, 0) // Free, by address order
	}
	reloc = append(reloc, 0x86, 0, 0, 0, 3, 0, 0, 0, 0xc2, 0, 0, 0, 3, 0, 0, 0)
	f.Add(reloc, int8(-1))
	f.Add(reloc, int8(0))
	f.Fuzz(func(t *testing.T, ops []byte, depth int8) {
		// At most maxFuzzOps operations: each free sorts the live blocks,
		// so the cost of an input grows faster than its length.
		ops = ops[:min(len(ops), 4*maxFuzzOps)]
		// A first region of 8 MiB: past it, blocks come from later regions
		// (internal/pageheap/region.go), whose Frees take the slow path.
		h, err := newHeap(Options{MagazineDepth: int(depth), Limit: 64 << 20, ProfileBytes: -1}, 8<<20)
		if err != nil {
			return // depth out of range: NewHeap said so, nothing to test
		}
		defer h.Close()
		c := h.NewLocal()
		defer c.Close()
		model := map[uintptr][]byte{}
		freed := map[uintptr]int{} // small blocks freed and not since handed out, by size
		goMem := make([]byte, 64)
		var want census
		for len(ops) >= 4 {
			op, arg := ops[0], binary.LittleEndian.Uint32(ops[:4])>>8
			ops = ops[4:]
			switch op % 5 {
			case 0, 1: // allocate; sizes skewed small, some large
				n := int(arg % 4096)
				if op%8 == 1 {
					n = int(arg % (4 * maxSmall))
				}
				var b []byte
				var msg string
				if op&0x20 != 0 && n <= 4096 { // at most 4 MiB live: never the limit
					b, msg = catchCorrupt(func() []byte { return c.Alloc(n) })
				} else if b, msg = catchCorrupt(func() []byte { b, err = h.TryAlloc(n); return b }); err != nil {
					continue // the limit: the model is unchanged
				}
				if msg != "" {
					if err := checkCorruptPanic(msg, n); err != nil {
						t.Fatal(err)
					}
					continue // an abandoned list: the model is unchanged
				}
				if n == 0 {
					continue
				}
				if err := checkFresh(h, model, b); err != nil {
					t.Fatal(err)
				}
				delete(freed, addrOf(b))
				for i, x := range b {
					if x != 0 {
						t.Fatalf("TryAlloc(%d)[%d] = %#x, not zeroed", n, i, x)
					}
				}
				fill(b)
				model[addrOf(b)] = b
				want.allocs++
				want.inUse += blockBytes(n)
				if largeBlock(n) {
					want.large++
				}
			case 2: // free a live block
				a, b, ok := pickLive(model, arg)
				if !ok {
					continue
				}
				if err := checkFill(b); err != nil {
					t.Fatal(err)
				}
				if op&0x20 != 0 {
					c.Free(b)
				} else {
					h.Free(b)
				}
				delete(model, a)
				if len(b) <= maxSmall {
					freed[a] = len(b)
				}
				want.frees++
				want.inUse -= blockBytes(len(b))
			case 4: // resize a live block, or relocate some
				if op&0x80 != 0 {
					if err := fuzzRelocate(h, model, freed, &want, arg, op&0x40 != 0); err != nil {
						t.Fatal(err)
					}
					continue
				}
				a, b, ok := pickLive(model, arg)
				if !ok {
					continue
				}
				n := int(arg>>8) % 4096
				if op%10 == 9 {
					n = int(arg>>8) % (4 * maxSmall)
				}
				old := slices.Clone(b)
				zero := op&0x40 == 0 // else ReallocUnzeroed
				nb, err := tryRealloc(h, b, n, zero)
				if err != nil {
					if err := checkFill(b); err != nil { // b must be as it was
						t.Fatalf("after a failed Realloc(%d): %v", n, err)
					}
					continue // the limit: the model is unchanged
				}
				if k := min(len(b), n); !bytes.Equal(nb[:k], old[:k]) {
					t.Fatalf("Realloc(%d bytes, %d) lost the contents", len(b), n)
				}
				for i := len(b); i < n && zero; i++ {
					if nb[i] != 0 {
						t.Fatalf("Realloc(%d bytes, %d)[%d] = %#x, not zeroed", len(b), n, i, nb[i])
					}
				}
				delete(model, a)
				if n == 0 {
					want.frees++
					want.inUse -= blockBytes(len(b))
					continue
				}
				if err := checkFresh(h, model, nb); n > 0 && err != nil {
					t.Fatal(err)
				}
				delete(freed, addrOf(nb))
				if na := addrOf(nb); na != a { // moved: an Alloc and a Free
					want.allocs++
					want.frees++
					want.inUse += blockBytes(n) - blockBytes(len(b))
					if largeBlock(n) {
						want.large++
					}
				} else if blockBytes(n) != blockBytes(len(b)) {
					t.Fatalf("Realloc(%d bytes, %d) kept a block of the wrong size", len(b), n)
				}
				fill(nb)
				model[addrOf(nb)] = nb
			case 3: // check everything
				if op >= 0xe0 {
					writeFreed(h, model, freed, arg, goMem)
					continue
				}
				if op&0x20 != 0 {
					c.Flush()
				}
				if err := checkModel(model); err != nil {
					t.Fatal(err)
				}
				if err := checkCensus(h.Stats(), want); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := checkModel(model); err != nil {
			t.Fatal(err)
		}
		for _, b := range model {
			h.Free(b)
			want.frees++
			want.inUse -= blockBytes(len(b))
		}
		if err := checkCensus(h.Stats(), want); err != nil {
			t.Fatal(err)
		}
	})
}

// maxFuzzOps bounds the operations of one FuzzHeap input.
const maxFuzzOps = 1024

// pickLive returns the live block that arg picks: the arg-th in address
// order, wrapping around; false if there is none.
func pickLive(model map[uintptr][]byte, arg uint32) (uintptr, []byte, bool) {
	if len(model) == 0 {
		return 0, nil, false
	}
	keys := slices.Sorted(mapsKeys(model))
	a := keys[int(arg)%len(keys)]
	return a, model[a], true
}

func mapsKeys(m map[uintptr][]byte) func(func(uintptr) bool) {
	return func(yield func(uintptr) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkModel verifies every live block's pattern and that no two overlap.
func checkModel(model map[uintptr][]byte) error {
	blocks := make([][]byte, 0, len(model))
	for _, b := range model {
		if err := checkFill(b); err != nil {
			return err
		}
		blocks = append(blocks, b)
	}
	slices.SortFunc(blocks, func(a, b []byte) int { return cmp.Compare(addrOf(a), addrOf(b)) })
	for i := 1; i < len(blocks); i++ {
		if prev := blocks[i-1]; addrOf(prev)+uintptr(len(prev)) > addrOf(blocks[i]) {
			return fmt.Errorf("blocks %#x+%d and %#x overlap", addrOf(prev), len(prev), addrOf(blocks[i]))
		}
	}
	return nil
}

// TestCheckModelControl: overlapping blocks must be reported.
func TestCheckModelControl(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.Alloc(256)
	fill(b)
	c := b[16:32]
	fill(c)
	fill(b[:16])
	model := map[uintptr][]byte{addrOf(b[:16]): b[:16], addrOf(c): c, addrOf(b[8:24]): b[8:24]}
	fill(b[8:24])
	if checkModel(model) == nil {
		t.Fatal("checkModel accepted overlapping blocks")
	}
	h.Free(b)
}

// fuzzRelocate relocates up to four live blocks of the model from the
// arg'th on, through RelocateAll or, one at a time, Relocate, and updates
// the model and census by what moved: each block must keep its bytes, and
// one that moved must be fresh. A corrupt free list (a write after free)
// may stop it with a panic, which leaves the block it met as it was.
func fuzzRelocate(h *Heap, model map[uintptr][]byte, freed map[uintptr]int, want *census, arg uint32, each bool) error {
	keys := slices.Sorted(maps.Keys(model))
	if len(keys) == 0 {
		return nil
	}
	k := int(arg) % len(keys)
	keys = keys[k:min(k+4, len(keys))]
	bs := make([][]byte, len(keys))
	olds := make([][]byte, len(keys))
	caps := make([]int, len(keys))
	for i, a := range keys {
		bs[i], olds[i], caps[i] = model[a], slices.Clone(model[a]), cap(model[a])
	}
	moved := -1 // not known when a panic stopped it
	func() {
		defer func() {
			if r := recover(); r != nil {
				if msg, ok := r.(string); !ok || !corruptRE.MatchString(msg) {
					panic(r)
				}
			}
		}()
		if !each {
			moved = h.RelocateAll(bs)
			return
		}
		n := 0
		for i, b := range bs {
			var ok bool
			if bs[i], ok = h.Relocate(b); ok {
				n++
			}
		}
		moved = n
	}()
	n := 0
	for i, a := range keys {
		nb := bs[i]
		if !bytes.Equal(nb, olds[i]) || cap(nb) != caps[i] {
			return fmt.Errorf("relocating %d bytes at %#x: the bytes or the capacity changed", len(nb), a)
		}
		if addrOf(nb) == a {
			continue
		}
		n++
		delete(model, a)
		if err := checkFresh(h, model, nb); err != nil {
			return err
		}
		delete(freed, addrOf(nb))
		freed[a] = len(nb)
		fill(nb)
		model[addrOf(nb)] = nb
		want.allocs++
		want.frees++
	}
	if moved >= 0 && moved != n {
		return fmt.Errorf("relocation said %d moved, %d did", moved, n)
	}
	return nil
}

// tryRealloc is h.Realloc, or h.ReallocUnzeroed without zero, returning
// the error it panicked with for a limit reached or a corrupt free list
// (freelist.go), either of which leaves b as it was.
func tryRealloc(h *Heap, b []byte, n int, zero bool) (nb []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && errors.Is(e, ErrLimit) {
				err = e
				return
			}
			if msg, ok := r.(string); ok && corruptRE.MatchString(msg) {
				err = errors.New(msg)
				return
			}
			panic(r)
		}
	}()
	return reallocFunc(h, zero)(b, n), nil
}

// catchCorrupt calls alloc and returns what it returned, or the corruption
// it panicked with.
func catchCorrupt(alloc func() []byte) (b []byte, msg string) {
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(string)
			if !ok || !corruptRE.MatchString(s) {
				panic(r)
			}
			msg = s
		}
	}()
	return alloc(), ""
}

// checkFresh reports a block that an Alloc returned outside the heap or
// overlapping a live block.
func checkFresh(h *Heap, model map[uintptr][]byte, b []byte) error {
	a := addrOf(b)
	if !h.pages.Contains(a) || !h.pages.Contains(a+uintptr(cap(b))-1) {
		return fmt.Errorf("an Alloc of %d bytes returned %#x, outside the heap", len(b), a)
	}
	for la, lb := range model {
		if a < la+uintptr(cap(lb)) && la < a+uintptr(cap(b)) {
			return fmt.Errorf("an Alloc of %d bytes returned %#x, overlapping the live block at %#x", len(b), a, la)
		}
	}
	return nil
}

// writeFreed writes an attacker's word, chosen by arg, into a word of a
// small block freed earlier that is still a free block of its class: not
// handed out since, its page still a span of the class.
func writeFreed(h *Heap, model map[uintptr][]byte, freed map[uintptr]int, arg uint32, goMem []byte) {
	if len(freed) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(freed))
	a := keys[int(arg)%len(keys)]
	n := freed[a]
	page, ok := h.pages.PageOf(a)
	if !ok || uint8(*h.pages.Entry(page)) != sizeClass(n) {
		delete(freed, a) // its span went back to the page heap
		return
	}
	for la, lb := range model {
		if a < la+uintptr(cap(lb)) && la < a+16 {
			delete(freed, a)
			return
		}
	}
	var v uintptr
	switch arg >> 8 % 6 {
	case 0:
		v = addrOf(goMem)
	case 1:
		v = wildAddress
	case 2:
		if _, b, ok := pickLive(model, arg>>12); ok {
			v = addrOf(b)
		}
	case 3:
		v = keys[int(arg>>12)%len(keys)]
	case 4:
		v = uintptr(uint64(arg) * 0x9e3779b97f4a7c15)
	case 5: // a word read out of another free block: its encoded link
		v = *(*uintptr)(ptr(keys[int(arg>>12)%len(keys)]))
	}
	w := (*[2]uintptr)(ptr(a))
	switch {
	case n <= 8 || arg>>16%3 == 0:
		w[0] = v
	case arg>>16%3 == 1:
		w[1] = v
	default:
		w[0], w[1] = v, v
	}
}
