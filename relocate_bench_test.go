package offheap

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkRelocateDense: Relocate of blocks whose spans are full, the cost
// of a pass over a heap with nothing to gain, per block (blocks=4096: all
// in cache; blocks=1M: the pass's lookups miss), in allocation order and in
// a random order, as a pass over a map or an index meets them. The blocks
// after the first n, which a magazine's refill may have carved from a span
// they leave sparse, are not relocated.
func BenchmarkRelocateDense(b *testing.B) {
	for _, n := range []int{4096, 1 << 20} {
		for _, order := range []string{"alloc", "random"} {
			b.Run(fmt.Sprintf("blocks=%d/order=%s", n, order), func(b *testing.B) {
				h := newTestHeap(b, unprofiled(Options{}))
				bs := make([][]byte, n+maxDepth)
				for i := range bs {
					bs[i] = h.Alloc(64)
				}
				bs = bs[:n]
				if order == "random" {
					rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })
				}
				b.ResetTimer()
				for i := range b.N {
					k := i % n
					bs[k], _ = h.Relocate(bs[k])
				}
			})
		}
	}
}

// BenchmarkRelocatePass: one Relocate pass over the survivors of a random
// eviction of nine values in ten (200k or 2M values of 16-512 B), per
// block moved, against moving the same survivors by hand (Alloc, copy,
// Free), per block, through the magazines and with them off (by-hand-nomag:
// Alloc and Free then take the central path to a span's free blocks, as
// Relocate does); with the default ReleaseDelay and with -1, where every
// span the pass empties goes back to the operating system at once. The two
// sizes show whether a pass's cost per block grows with the heap.
func BenchmarkRelocatePass(b *testing.B) {
	for _, values := range []int{200_000, 2_000_000} {
		for _, rd := range []time.Duration{0, -1} {
			for _, way := range []string{"relocate", "relocate-all", "by-hand", "by-hand-nomag"} {
				b.Run(fmt.Sprintf("values=%d/release=%v/way=%s", values, rd, way), func(b *testing.B) {
					benchRelocatePass(b, values, rd, way)
				})
			}
		}
	}
}

// benchRelocatePass is one row of BenchmarkRelocatePass.
func benchRelocatePass(b *testing.B, values int, rd time.Duration, way string) {
	var el time.Duration
	var blocks int
	for i := range b.N {
		opts := Options{ReleaseDelay: rd}
		if way == "by-hand-nomag" {
			opts.MagazineDepth = -1
		}
		h, err := NewHeap(unprofiled(opts))
		if err != nil {
			b.Fatal(err)
		}
		keep := evictNineInTen(h, values, uint64(i))
		b.StopTimer()
		t0 := time.Now()
		switch way {
		case "relocate":
			blocks += relocateEach(h, keep)
		case "relocate-all":
			blocks += relocateBatches(h, keep)
		default:
			blocks += moveByHand(h, keep)
		}
		el += time.Since(t0)
		b.StartTimer()
		h.Close()
	}
	b.ReportMetric(float64(el.Nanoseconds())/float64(max(blocks, 1)), "ns/block")
}

// evictNineInTen fills h with values of 16-512 B drawn from seed, frees
// nine in ten at random, trims, and returns the survivors in the order
// they were allocated, as newFloorHeap does for its heap
// (relocate_floor_test.go).
func evictNineInTen(h *Heap, values int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 5))
	all := make([][]byte, values)
	for i := range all {
		all[i] = h.Alloc(16 + rng.IntN(497))
		all[i][0] = byte(i)
	}
	var keep [][]byte
	for _, v := range all {
		if rng.IntN(10) == 0 {
			keep = append(keep, v)
		} else {
			h.Free(v)
		}
	}
	h.Trim()
	return keep
}

// relocateEach offers every block to Relocate, keeps what it returns, and
// says how many moved.
func relocateEach(h *Heap, keep [][]byte) (moved int) {
	for k, v := range keep {
		var ok bool
		if keep[k], ok = h.Relocate(v); ok {
			moved++
		}
	}
	return moved
}

// relocateBatches offers every block to RelocateAll, a thousand at a time,
// and says how many moved.
func relocateBatches(h *Heap, keep [][]byte) (moved int) {
	for part := range slices.Chunk(keep, 1000) {
		moved += h.RelocateAll(part)
	}
	return moved
}

// moveByHand moves every block with AllocUnzeroed, copy and Free.
func moveByHand(h *Heap, keep [][]byte) int {
	for k, v := range keep {
		nv := h.AllocUnzeroed(cap(v))
		copy(nv, v)
		h.Free(v)
		keep[k] = nv
	}
	return len(keep)
}
