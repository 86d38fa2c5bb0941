package shapes

import (
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// gcReport is a report of the gc shape's two map ways over runs, with the
// GC CPU shares given (map-ref's, then map-offheap's, run by run), and
// summaries holding their medians as the runner computes them.
func gcReport(ref, slices []float64) *bench.Report {
	r := &bench.Report{}
	med := func(v []float64) float64 { // the middle of three, enough here
		a, b, c := v[0], v[1], v[2]
		return max(min(a, b), min(max(a, b), c))
	}
	for _, way := range []struct {
		row    string
		shares []float64
	}{{"map-ref", ref}, {"map-offheap", slices}} {
		for run, v := range way.shares {
			r.Samples = append(r.Samples, bench.Measurement{Shape: "gc", Row: way.row, Workers: 1, Run: run,
				Metrics: map[string]float64{gcCPU: v, gcForced: 1}})
		}
		r.Summaries = append(r.Summaries, bench.Summary{Shape: "gc", Row: way.row, Workers: 1, Runs: len(way.shares),
			MinNs: 500, Metrics: map[string]float64{gcCPU: med(way.shares), gcForced: 1}})
	}
	return r
}

// TestGCVerdict: the map of Refs' GC share against the map of slices' is
// met below a third, missed above, not judged when the runs' own ratios
// fall on both sides of it, and skipped without the ways or their shares.
func TestGCVerdict(t *testing.T) {
	for _, tc := range []struct {
		ref, slices []float64
		want        string
		value       float64
	}{
		{[]float64{0.2, 0.2, 0.2}, []float64{3, 3, 3}, bench.Met, 0.2 / 3},
		{[]float64{1.5, 1.5, 1.5}, []float64{3, 3, 3}, bench.Missed, 0.5},
		{[]float64{0.5, 1.2, 0.8}, []float64{3, 3, 3}, bench.NotJudged, 0.8 / 3}, // 0.17x, 0.40x, 0.27x
		{[]float64{0.2, 0.2, 0.2}, []float64{0, 0, 0}, bench.NotJudged, 0},       // no collection ended
	} {
		vs := gcVerdicts(gcReport(tc.ref, tc.slices))
		if len(vs) != 1 {
			t.Fatalf("%d verdicts, want 1", len(vs))
		}
		v := vs[0]
		if v.Outcome() != tc.want || v.Value != tc.value {
			t.Errorf("shares %v against %v: %s, %.3f (%s); want %s, %.3f", tc.ref, tc.slices, v.Status(), v.Value, v.Measured, tc.want, tc.value)
		}
	}
	r := gcReport([]float64{0.2, 0.2, 0.2}, []float64{3, 3, 3})
	r.Summaries = r.Summaries[:1]
	if v := gcVerdicts(r)[0]; v.Skipped == "" {
		t.Errorf("without the map-offheap way: %+v, want skipped", v)
	}
}
