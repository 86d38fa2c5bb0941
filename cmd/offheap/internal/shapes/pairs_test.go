package shapes

import (
	"slices"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// TestPairsLargeVerdict: a 64 KiB pair at up to 3x a 16 KiB pair meets
// the target, and the cliff of a page heap under a lock (11x) misses it.
func TestPairsLargeVerdict(t *testing.T) {
	var names []string
	for _, sub := range pairsSubs() {
		names = append(names, sub.Name)
	}
	for _, want := range []string{pairs16KUnzeroed, pairs64KUnzeroed} {
		if !slices.Contains(names, want) {
			t.Errorf("the verdict reads sub %s, which pairs does not have: %v", want, names)
		}
	}
	for _, tc := range []struct {
		ns64K float64
		want  string
	}{{14, bench.Met}, {160, bench.Missed}} {
		r := &bench.Report{Summaries: []bench.Summary{
			{Shape: "pairs", Sub: pairs16KUnzeroed, Row: "offheap", Workers: 1, MinNs: 14, NextNs: 14.1},
			{Shape: "pairs", Sub: pairs64KUnzeroed, Row: "offheap", Workers: 1, MinNs: tc.ns64K, NextNs: tc.ns64K * 1.01},
			{Shape: "pairs", Sub: pairs64, Row: "offheap", Workers: 1, MinNs: 14},
		}}
		var got *bench.Verdict
		for _, v := range pairsVerdicts(r) {
			if v.Name == "pairs-64k/16k" {
				got = &v
			}
		}
		if got == nil {
			t.Fatal("no pairs-64k/16k verdict")
		}
		if got.Outcome() != tc.want {
			t.Errorf("64 KiB at %.0f ns against 16 KiB at 14: %s (%s), want %s", tc.ns64K, got.Status(), got.Measured, tc.want)
		}
	}
}
