package offheap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// FuzzArena plans operations from the input and runs them on several
// goroutines at once against one arena whose heap refuses it memory during
// the operations the input selects (as a heap at its Limit does). The
// reference model is the list of every allocation that succeeded, each
// filled with its own pattern: after each phase, and after every failure,
// all of them must be aligned, disjoint and intact, and the arena's census
// must match their rounded sizes. Phases end with Reset; the last with
// Release, after which every chunk must be back in the heap.
//
// Input layout: byte 0 workers (2..4), byte 1 chunk size and growth, bytes
// 2..9 the failure mask (the heap refuses memory from operation i on, until
// an operation whose bit is clear, if bit i%64 is set, or from operation 63
// on when byte 1's bit 7 is set), then two bytes per operation: kind and
// size.
func FuzzArena(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{2, 1, 0xff, 0, 0, 0, 0, 0, 0, 0x80, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80})
	f.Add([]byte{1, 2, 0x10, 0x22, 0, 0x81, 0, 0, 0x40, 0, 0x10, 200, 0x11, 250, 0x12, 4, 0x13, 100, 0xf0, 0, 0x14, 9})
	f.Add([]byte{2, 0x83, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x0f, 1, 0x2e, 3, 0xf1, 0, 0x33, 7, 0x44, 255})
	seed := make([]byte, 10+2*400)
	for i := range seed {
		seed[i] = byte(i*37 + i>>3)
	}
	f.Add(seed)

	// One heap for every run: a run checks that the heap's InUseBytes come
	// back to where they started, and a heap per run would spend the fuzzing
	// time on mmap.
	h, err := NewHeap(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 10 {
			return
		}
		workers := 2 + int(data[0])%3
		chunk := uintptr(arenaChunkMin) << (data[1] & 3) // 16 to 128 KiB
		grow := data[1]&4 != 0
		failTail := data[1]&0x80 != 0
		mask := binary.LittleEndian.Uint64(data[2:10])
		ops := data[10:]
		if len(ops) > 2*2000 {
			ops = ops[:2*2000]
		}

		before := h.Stats().InUseBytes
		fails := func(op int) bool { return failTail && op >= 63 || mask>>(op%64)&1 != 0 }
		a := newArena(h, chunk, grow)

		// Split the plan into phases at Reset ops, and each phase's
		// operations round-robin over the workers.
		type op struct{ kind, size byte }
		var phases [][]op
		cur := []op{}
		for i := 0; i+1 < len(ops); i += 2 {
			o := op{ops[i], ops[i+1]}
			if o.kind >= 0xf0 {
				phases = append(phases, cur)
				cur = []op{}
				continue
			}
			cur = append(cur, o)
		}
		phases = append(phases, cur)

		for pi, phase := range phases {
			var r recorder
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := w; i < len(phase); i += workers {
						h.failRuns(fails(i))
						runFuzzOp(a, &r, phase[i].kind, phase[i].size, chunk)
					}
				})
			}
			wg.Wait()
			h.failRuns(false)
			r.check(t)
			if got, want := a.Stats().AllocBytes, r.bytes(); got != want {
				t.Fatalf("phase %d: Stats().AllocBytes = %d, want %d", pi, got, want)
			}
			if s := a.Stats(); s.AllocBytes+s.WasteBytes > s.HeldBytes {
				t.Fatalf("phase %d: census %+v hands out more than it holds", pi, s)
			}
			if pi < len(phases)-1 {
				a.Reset()
			}
		}
		a.Release()
		if got := h.Stats().InUseBytes; got != before { // every chunk back in the heap
			t.Fatalf("heap InUseBytes %d after Release, want %d", got, before)
		}
	})
}

// runFuzzOp performs one planned allocation. kind's low bits pick the size
// range, bit 4 Alloc (recovering its panic) or TryAlloc.
func runFuzzOp(a *Arena, r *recorder, kind, size byte, chunk uintptr) {
	var n int
	switch kind & 7 {
	case 0, 1, 2, 3:
		n = 1 + int(size) // fast path
	case 4:
		n = 257 + int(size)*16 // up to 4 KiB: the shared path
	case 5:
		n = int(chunk)/4 + int(size)*64 // chunks of their own
	case 6:
		n = 0
	case 7:
		n = int(chunk) + int(size)*512
	}
	var b []byte
	var err error
	if kind&0x10 != 0 {
		func() {
			defer func() {
				if p := recover(); p != nil {
					e, ok := p.(error)
					if !ok {
						e = fmt.Errorf("Alloc(%d) panicked with %v", n, p)
					}
					err = e
				}
			}()
			b = a.Alloc(n)
		}()
	} else {
		b, err = a.TryAlloc(n)
	}
	if err != nil {
		if !errors.Is(err, ErrLimit) {
			r.fail(fmt.Errorf("allocation of %d bytes: %v, want the heap's ErrLimit", n, err))
		}
		return
	}
	if len(b) != n || (n == 0 && b == nil) {
		r.fail(fmt.Errorf("allocation of %d bytes returned len %d (nil %v)", n, len(b), b == nil))
		return
	}
	if n > 0 {
		r.add(nil, b)
	}
}
