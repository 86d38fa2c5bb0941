package offheap

import (
	"fmt"
	"slices"
	"testing"
	"time"
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
		b.Run(fmt.Sprintf("from=%s/to=%s", sizeString(uint64(from)), sizeString(uint64(to))), func(b *testing.B) {
			h := newTestHeap(b, Options{ProfileRate: -1})
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
