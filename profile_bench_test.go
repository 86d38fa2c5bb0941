package offheap

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkProfileSample is a 64-byte Alloc+Free pair in heaps that sample
// none of them (rate=off), about one in 8192 (rate=default, 512 KiB), and
// every one (rate=1): the difference between the last and the first is
// what one sample costs, its Alloc and its Free together.
func BenchmarkProfileSample(b *testing.B) {
	for _, arm := range []struct {
		name string
		rate int
	}{{"off", -1}, {"default", 0}, {"1", 1}} {
		h := newTestHeap(b, Options{ProfileBytes: arm.rate})
		b.Run("rate="+arm.name, func(b *testing.B) {
			for b.Loop() {
				h.Free(h.Alloc(64))
			}
		})
	}
}

// BenchmarkProfileCost is BenchmarkPair64's pair on a heap that profiles at
// the default rate and on one that does not, interleaved in one process:
// each iteration times a round of pairs on each, in turn first, so that
// whatever else the machine does falls on both alike. It reports each
// heap's ns per pair and the median over rounds of the ratio of the two
// (profiled/unprofiled), the figure the profile's claim is about: a round
// is 1<<16 pairs, about eight samples at the default rate. With magazines
// off (depth=off) every allocation is drawn for on its own (sampling.go).
func BenchmarkProfileCost(b *testing.B) {
	for _, depth := range []struct {
		name  string
		depth int
	}{{"default", 0}, {"off", -1}} {
		b.Run("depth="+depth.name, func(b *testing.B) {
			on := newTestHeap(b, Options{MagazineDepth: depth.depth})
			off := newTestHeap(b, Options{MagazineDepth: depth.depth, ProfileBytes: -1})
			const round = 1 << 16
			pairs := func(h *Heap) time.Duration {
				t := time.Now()
				for range round {
					h.Free(h.Alloc(64))
				}
				return time.Since(t)
			}
			var tOn, tOff time.Duration
			var ratios []float64
			for b.Loop() {
				var a, c time.Duration
				if len(ratios)%2 == 0 {
					a = pairs(on)
					c = pairs(off)
				} else {
					c = pairs(off)
					a = pairs(on)
				}
				tOn += a
				tOff += c
				ratios = append(ratios, float64(a)/float64(c))
			}
			slices.Sort(ratios)
			n := float64(len(ratios) * round)
			b.ReportMetric(float64(tOn.Nanoseconds())/n, "ns/pair-profiled")
			b.ReportMetric(float64(tOff.Nanoseconds())/n, "ns/pair-unprofiled")
			b.ReportMetric(ratios[len(ratios)/2], "profiled/unprofiled")
		})
	}
}
