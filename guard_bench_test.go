package offheap

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkGuardSample is a 64-byte Alloc+Free pair in a heap that puts
// every allocation on guard pages (GuardOneIn 1) and in one that guards
// none: the difference is what one guarded sample costs, its Alloc, its
// Free and its way through the quarantine back to the pool together.
func BenchmarkGuardSample(b *testing.B) {
	for _, arm := range []struct {
		name string
		rate int
	}{{"off", 0}, {"1", 1}} {
		h := newTestHeap(b, Options{GuardOneIn: arm.rate, ProfileBytes: -1})
		b.Run("rate="+arm.name, func(b *testing.B) {
			for b.Loop() {
				h.Free(h.Alloc(64))
			}
		})
	}
}

// BenchmarkGuardColdSamples is a new sampled heap's first 1000 samples
// (GuardOneIn 1, an Alloc and a Free each), reported per sample: until its
// quarantine fills, a sample that finds neither the pool nor a spare run
// takes a run of its own.
func BenchmarkGuardColdSamples(b *testing.B) {
	const samples = 1000
	for b.Loop() {
		b.StopTimer()
		h, err := NewHeap(Options{GuardOneIn: 1, ProfileBytes: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for range samples {
			h.Free(h.Alloc(100))
		}
		b.StopTimer()
		h.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*samples), "ns/sample")
}

// BenchmarkSampleRateCost is BenchmarkPair64's pair on a heap that samples
// one allocation in rate for guard pages and on one that samples none,
// interleaved in one process: each iteration times a round of rate pairs
// on each, in turn first. A sample is rare and costly, so a round's ratio
// swings with how many samples fell in it; the figure is the ratio of the
// two arms' total times (sampled/unsampled), over the rounds in which the
// unsampled arm took less than 1.25 times its median: a round that the
// rest of the machine slowed is left out for both arms.
func BenchmarkSampleRateCost(b *testing.B) {
	for _, rate := range []int{10_000, 25_000, 50_000, 100_000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			on := newTestHeap(b, Options{GuardOneIn: rate, ProfileBytes: -1})
			off := newTestHeap(b, Options{ProfileBytes: -1})
			pairs := func(h *Heap) time.Duration {
				t := time.Now()
				for range rate {
					h.Free(h.Alloc(64))
				}
				return time.Since(t)
			}
			var ons, offs []time.Duration
			for b.Loop() {
				if len(ons)%2 == 0 {
					ons = append(ons, pairs(on))
					offs = append(offs, pairs(off))
				} else {
					offs = append(offs, pairs(off))
					ons = append(ons, pairs(on))
				}
			}
			sorted := slices.Clone(offs)
			slices.Sort(sorted)
			limit := sorted[len(sorted)/2] * 5 / 4
			var sumOn, sumOff time.Duration
			for i := range offs {
				if offs[i] < limit {
					sumOn += ons[i]
					sumOff += offs[i]
				}
			}
			b.ReportMetric(float64(sumOn)/float64(sumOff), "sampled/unsampled")
		})
	}
}
