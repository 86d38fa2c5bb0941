package offheap

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/pageheap"
)

// BenchmarkRealloc times Realloc(b, to) of a from-byte block b, all of whose
// pages were written, against the same resize written by hand,
// AllocUnzeroed(to) + copy + Free(b) (arm hand), and against the hand
// version that zeroes what Realloc promises to zero, the bytes past the
// copy (arm hand-zeroed). The arms alternate op by op in one loop, each
// first in turn, so that other load on the machine falls on all of them; each op starts from a
// fresh block of from bytes whose setup is not timed, and its result is
// freed and the heap trimmed untimed, so that every op finds the free pages
// clean, as a growing heap does. (With dirty free pages about, Realloc
// zeroes what it takes of them past the copy, as Alloc does, which the hand
// arm skips: arm hand-zeroed pays it too.) Reported: each arm's median ns
// per op, realloc/hand of the medians, and the most one Realloc grew the
// heap's resident memory by (ResidentBytes, in MiB).
//
//	go test -run '^$' -bench 'Realloc$' -benchtime 20x -count 3 .
//
// The pairs above 64 MiB run only with -bench, not in -short.
func BenchmarkRealloc(b *testing.B) {
	const (
		k = 1 << 10
		m = 1 << 20
	)
	pairs := [][2]int{
		{k, 64 * k}, {64 * k, k}, {100 * k, 300 * k}, {300 * k, 600 * k}, {m, 2 * m}, {2 * m, m},
		{16 * m, 32 * m}, {32 * m, 16 * m}, {k, 64 * m}, {512 * m, 1024 * m}, {1024 * m, 512 * m}, {k, 1024 * m}, {m, 1024 * m},
	}
	for _, p := range pairs {
		from, to := p[0], p[1]
		if testing.Short() && max(from, to) > 64*m {
			continue
		}
		b.Run(fmt.Sprintf("from=%s/to=%s", pageheap.SizeString(uint64(from)), pageheap.SizeString(uint64(to))), func(b *testing.B) {
			h := newTestHeap(b, Options{ProfileBytes: -1})
			fence := h.Alloc(maxSmall + 1) // keeps each block from the frontier
			defer h.Free(fence)
			arms := []struct {
				name string
				op   func(old []byte) []byte
				ns   []time.Duration
			}{
				{name: "realloc", op: func(old []byte) []byte { return h.Realloc(old, to) }},
				{name: "hand", op: func(old []byte) []byte {
					nb := h.AllocUnzeroed(to)
					copy(nb, old)
					h.Free(old)
					return nb
				}},
				{name: "hand-zeroed", op: func(old []byte) []byte {
					nb := h.AllocUnzeroed(to)
					clear(nb[copy(nb, old):])
					h.Free(old)
					return nb
				}},
			}
			ops := 0
			grew := int64(0) // the most an op of realloc's arm grew resident memory
			for b.Loop() {
				for i := range arms {
					a := &arms[(i+ops)%len(arms)] // each arm first in turn
					old := h.AllocUnzeroed(from)
					for j := 0; j < len(old); j += 4096 {
						old[j] = byte(j)
					}
					// Something after old, so that it cannot grow in place.
					after := h.Alloc(maxSmall + 1)
					var r0 uint64
					if i == 0 && ops%len(arms) == 0 { // realloc's arm, now and then
						r0, _ = h.ResidentBytes()
					}
					t0 := time.Now()
					nb := a.op(old)
					a.ns = append(a.ns, time.Since(t0))
					if r0 != 0 {
						r1, _ := h.ResidentBytes()
						grew = max(grew, int64(r1)-int64(r0))
					}
					h.Free(after)
					h.Free(nb)
					h.Trim()
				}
				ops++
			}
			b.ReportMetric(0, "ns/op")
			med := make([]float64, len(arms))
			for i, a := range arms {
				slices.Sort(a.ns)
				med[i] = float64(a.ns[len(a.ns)/2])
				b.ReportMetric(med[i], a.name+"-ns/op")
			}
			b.ReportMetric(med[0]/med[1], "realloc/hand")
			b.ReportMetric(float64(grew)/(1<<20), "realloc-resident-MiB")
		})
	}
}

// BenchmarkReallocPairs times Realloc and ReallocUnzeroed between every two
// of a set of sizes, small and large, against the same resize written by
// hand: Alloc(to) + copy + Free(old) for Realloc (arm hand: it zeroes what
// Realloc zeroes and more), AllocUnzeroed(to) + copy + Free(old) for
// ReallocUnzeroed (arm hand-unzeroed). The four arms alternate in one
// loop, in an order drawn anew each round (an arm that always ran after the
// zeroing of a MiB ran up to 15% slower, whatever its code), with a fifth
// that times nothing: its median,
// the cost of reading the clock, is taken off each arm's before the ratios,
// which would otherwise lean toward 1 where an op takes tens of ns. Where
// both sizes are small enough, a timing covers a few ops in a row (a
// magazine's worth, at most 16), the clock's steps being about 10 ns here.
// Each arm has a heap of its own, in a steady state, as a program's that
// resizes a buffer over and over and writes what it gets: every op takes a
// from-byte block written whole (untimed) from the heap, where the last
// op's results went back written whole (untimed), so that small blocks come from the magazine and large runs
// from the free pages the arm itself left; a block allocated after a large
// one keeps it from growing in place.
// Reported: each arm's median ns per op, less the clock's, and
// realloc/hand and unzeroed/hand-unzeroed of those.
//
//	go test -run '^$' -bench ReallocPairs -benchtime 100x -count 5 .
func BenchmarkReallocPairs(b *testing.B) {
	sizes := []int{1 << 10, 4 << 10, 64 << 10, 256 << 10, 1 << 20, 16 << 20}
	for _, from := range sizes {
		for _, to := range sizes {
			if from != to {
				b.Run(fmt.Sprintf("from=%s/to=%s", pageheap.SizeString(uint64(from)), pageheap.SizeString(uint64(to))), func(b *testing.B) {
					benchReallocPair(b, from, to)
				})
			}
		}
	}
}

func benchReallocPair(b *testing.B, from, to int) {
	type arm struct {
		name string
		op   func(h *Heap, old []byte) []byte
		h    *Heap
		ns   []float64
	}
	arms := []arm{
		{name: "realloc", op: func(h *Heap, old []byte) []byte { return h.Realloc(old, to) }},
		{name: "hand", op: func(h *Heap, old []byte) []byte {
			nb := h.Alloc(to)
			copy(nb, old)
			h.Free(old)
			return nb
		}},
		{name: "unzeroed", op: func(h *Heap, old []byte) []byte { return h.ReallocUnzeroed(old, to) }},
		{name: "hand-unzeroed", op: func(h *Heap, old []byte) []byte { // the same, unzeroed: a direct call, as a program's
			nb := h.AllocUnzeroed(to)
			copy(nb, old)
			h.Free(old)
			return nb
		}},
		{name: "clock", op: func(h *Heap, old []byte) []byte { return old }},
	}
	for i := range arms {
		arms[i].h = newTestHeap(b, Options{ProfileBytes: -1})
	}
	r := min(max((64<<10)/max(from, to), 1), 16) // ops per timing
	blocks := make([][]byte, r)
	var after [16][]byte
	ops := 0
	order := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		for _, i := range order.Perm(len(arms)) {
			a := &arms[i]
			h := a.h
			for j := range blocks {
				blocks[j] = h.AllocUnzeroed(from)
				clear(blocks[j])
				blocks[j][0] = byte(ops)
				if from > maxSmall {
					after[j] = h.Alloc(maxSmall + 1) // the block cannot grow in place
				}
			}
			t0 := time.Now()
			for j, old := range blocks {
				blocks[j] = a.op(h, old)
			}
			a.ns = append(a.ns, float64(time.Since(t0))/float64(r))
			for j, nb := range blocks {
				if nb[0] != byte(ops) {
					b.Fatalf("%s lost the block's first byte", a.name)
				}
				clear(nb[1:]) // the program writes what it resized
				h.Free(after[j])
				h.Free(nb)
			}
		}
		ops++
	}
	b.ReportMetric(0, "ns/op")
	med := make(map[string]float64, len(arms))
	for _, a := range arms {
		slices.Sort(a.ns)
		med[a.name] = a.ns[len(a.ns)/2]
	}
	for _, a := range arms[:4] {
		med[a.name] -= med["clock"]
		b.ReportMetric(med[a.name], a.name+"-ns/op")
	}
	b.ReportMetric(float64(len(arms[0].ns)), "timings")
	b.ReportMetric(med["realloc"]/med["hand"], "realloc/hand")
	b.ReportMetric(med["unzeroed"]/med["hand-unzeroed"], "unzeroed/hand-unzeroed")
}
