package shapes

import (
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
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

	// A machine whose compute control did not scale excuses a missed
	// figure, not a met one.
	r := report(2)
	r.Summaries[1].MinNs = 1.5 // the control 1.33x at 2 workers
	if m, note, inc := scaling(r, "pairs", "64", 2, 0.7, 0.6); !inc || note != "machine did not scale" {
		t.Errorf("control at 1.33x, figure 0.70: inconclusive %v, note %q, measured %q", inc, note, m)
	}
	if m, note, inc := scaling(r, "pairs", "64", 2, 0.55, 0.6); inc || note != "" {
		t.Errorf("control at 1.33x, figure 0.55: inconclusive %v, note %q, measured %q", inc, note, m)
	}
}

// TestCheckCostVerdicts checks the checked-mode cost verdicts: none when
// neither arm ran, the worst sub judged when one did, and a pass and a fail
// on either side of the limit.
func TestCheckCostVerdicts(t *testing.T) {
	rows := func(arm string, ns ...float64) []bench.Summary {
		var s []bench.Summary
		for i, v := range ns {
			s = append(s, bench.Summary{Shape: "live-k", Sub: []string{"k=1", "k=3"}[i], Row: arm, Workers: 1, MinNs: v})
		}
		return s
	}
	subs := []string{"k=1", "k=3"}
	r := &bench.Report{Summaries: rows("offheap", 10, 10)}
	if vs := checkCostVerdicts(r, "live-k", subs); len(vs) != 0 {
		t.Fatalf("no checked arm ran, got %d verdicts: %+v", len(vs), vs)
	}
	r.Summaries = append(r.Summaries, rows("offheap-checked", 25, 31)...)
	r.Summaries = append(r.Summaries, rows("offheap-sampled", 10.5, 10.9)...)
	vs := checkCostVerdicts(r, "live-k", subs)
	if len(vs) != 2 {
		t.Fatalf("got %d verdicts, want 2: %+v", len(vs), vs)
	}
	if v := vs[0]; v.Outcome() != bench.Missed || v.Value != 3.1 {
		t.Errorf("checked, worst 3.1x against 3x: %s %.2f (%s)", v.Status(), v.Value, v.Measured)
	}
	if v := vs[1]; v.Outcome() != bench.Met || v.Value != 1.09 {
		t.Errorf("sampled, worst 1.09x against 1.1x: %s %.2f (%s)", v.Status(), v.Value, v.Measured)
	}
	r.Summaries = rows("offheap-checked", 25, 31)
	if vs := checkCostVerdicts(r, "live-k", subs); len(vs) != 1 || vs[0].Outcome() != bench.NotJudged {
		t.Errorf("checked arm without the offheap arm: %+v, want one not judged", vs)
	}
}
