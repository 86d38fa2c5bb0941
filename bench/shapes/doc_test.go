package shapes

import (
	"testing"

	"github.com/offheap/offheap/bench"
)

// TestScalingNull checks that a scaling figure is inconclusive when the
// shape's null loop did not scale, and only then: the positive control is
// the same report with a null row that scaled.
func TestScalingNull(t *testing.T) {
	report := func(null2 float64) *bench.Report {
		return &bench.Report{
			Shapes: []bench.ShapeInfo{{Name: "compute", Rows: []string{"compute"}, Control: true}},
			Summaries: []bench.Summary{
				{Shape: "compute", Row: "compute", Workers: 1, MinNs: 2},
				{Shape: "compute", Row: "compute", Workers: 2, MinNs: 1}, // the control scaled
				{Shape: "pairs", Sub: "64", Row: "null", Workers: 1, MinNs: 4},
				{Shape: "pairs", Sub: "64", Row: "null", Workers: 2, MinNs: null2},
			},
		}
	}
	if m, note, inc := scaling(report(3.6), "pairs", "64", 2, 0.6); !inc || note == "" {
		t.Errorf("null loop at 0.90: inconclusive %v, note %q, measured %q", inc, note, m)
	}
	if m, note, inc := scaling(report(2), "pairs", "64", 2, 0.6); inc || note != "" {
		t.Errorf("null loop at 0.50: inconclusive %v, note %q, measured %q", inc, note, m)
	} else if m != ", compute control 0.50, null 0.50" {
		t.Errorf("measured %q", m)
	}
}
