package shapes

import (
	"testing"

	"github.com/offheap/offheap/bench"
)

// TestScalingNull checks that a figure over its limit is inconclusive when
// the shape's null loop did not scale, and only then: the positive controls
// are the same report with a null row that scaled, and a figure that met
// its limit anyway.
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
	if m, note, inc := scaling(report(3.6), "pairs", "64", 2, 0.7, 0.6); !inc || note == "" {
		t.Errorf("null loop at 0.90, figure 0.70: inconclusive %v, note %q, measured %q", inc, note, m)
	}
	if m, note, inc := scaling(report(3.6), "pairs", "64", 2, 0.55, 0.6); inc || note != "" {
		t.Errorf("null loop at 0.90, figure 0.55: inconclusive %v, note %q, measured %q", inc, note, m)
	}
	if m, note, inc := scaling(report(2), "pairs", "64", 2, 0.7, 0.6); inc || note != "" {
		t.Errorf("null loop at 0.50: inconclusive %v, note %q, measured %q", inc, note, m)
	} else if m != ", compute control 0.50, null 0.50" {
		t.Errorf("measured %q", m)
	}
}
