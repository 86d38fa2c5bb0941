package shapes

import (
	"strings"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// TestScalingNull checks that a scaling figure over its limit is not
// judged when the shape's null loop did not scale, or the compute control,
// and only then: the positive controls are the same report with a null row
// that scaled, and a figure that met its limit anyway.
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
	judge := func(r *bench.Report, v float64) bench.Verdict {
		return scalingAtMost(bench.Verdict{Value: v}, 0.6, r, "pairs", "64", "null", 2)
	}
	if v := judge(report(3.6), 0.7); !v.Inconclusive || v.Note != "the null loop did not scale either" {
		t.Errorf("null loop at 0.90, figure 0.70: %+v", v)
	}
	if v := judge(report(3.6), 0.55); v.Inconclusive || !v.Pass {
		t.Errorf("null loop at 0.90, figure 0.55: %+v", v)
	}
	if v := judge(report(2), 0.7); v.Inconclusive || v.Pass {
		t.Errorf("null loop at 0.50, figure 0.70: %+v", v)
	} else if v.Measured != ", compute control 0.50, null 0.50" {
		t.Errorf("measured %q", v.Measured)
	}

	// A machine whose compute control did not scale excuses a missed
	// figure, not a met one.
	r := report(2)
	r.Summaries[1].MinNs = 1.5 // the control 1.33x at 2 workers
	if v := judge(r, 0.7); !v.Inconclusive || v.Note != "machine did not scale" {
		t.Errorf("control at 1.33x, figure 0.70: %+v", v)
	}
	if v := judge(r, 0.55); v.Inconclusive || !v.Pass {
		t.Errorf("control at 1.33x, figure 0.55: %+v", v)
	}
}

// TestNoise checks that a figure within its cells' noise of the target is
// not judged, and one clear of it is, on either side; the controls are the
// same figures from cells whose two best runs agree.
func TestNoise(t *testing.T) {
	cell := func(min, next float64) *bench.Summary { return &bench.Summary{MinNs: min, NextNs: next, Runs: 6} }
	for _, tc := range []struct {
		v, next         float64 // the figure, and the second run of its first cell (its min is 10)
		pass, notJudged bool
	}{
		{1.00, 10.1, true, false},  // 1% noise, 5% under the limit: met
		{1.00, 11.0, true, true},   // 10% noise: not judged
		{1.12, 10.1, false, false}, // 1% noise, 7% over: missed
		{1.12, 11.0, false, true},  // 10% noise: not judged
		{1.12, 0, false, false},    // one run: no noise known, judged as measured
	} {
		v := atMost(bench.Verdict{Value: tc.v}, 1.05, cell(10, tc.next), cell(10, 10.05))
		if v.Pass != tc.pass || v.Inconclusive != tc.notJudged {
			t.Errorf("%.2f against 1.05, runs 10 and %.1f: pass %v, not judged %v (%s); want %v, %v",
				tc.v, tc.next, v.Pass, v.Inconclusive, v.Note, tc.pass, tc.notJudged)
		}
	}
	if v := atLeast(bench.Verdict{Value: 0.56}, 0.5, cell(10, 10.2)); !v.Pass || v.Inconclusive {
		t.Errorf("0.56 against at least 0.50, 2%% noise: %+v", v)
	}
	if v := atLeast(bench.Verdict{Value: 0.52}, 0.5, cell(10, 10.8)); v.Outcome() != bench.NotJudged {
		t.Errorf("0.52 against at least 0.50, 8%% noise: %+v", v)
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

// TestNeedsIdleCore: a figure against make or a producer and consumer is
// not judged when the machine did not scale, met or not, and is left as it
// was when it did.
func TestNeedsIdleCore(t *testing.T) {
	report := func(ctl2 float64) *bench.Report {
		return &bench.Report{
			Shapes: []bench.ShapeInfo{{Name: "compute", Rows: []string{"compute"}, Control: true}},
			Summaries: []bench.Summary{
				{Shape: "compute", Row: "compute", Workers: 1, MinNs: 2},
				{Shape: "compute", Row: "compute", Workers: 2, MinNs: ctl2},
			},
		}
	}
	for _, pass := range []bool{true, false} {
		if v := needsIdleCore(bench.Verdict{Pass: pass}, report(1.5), makeIdleCore); v.Outcome() != bench.NotJudged || v.Note != "machine did not scale, and make's collector works on the other core" {
			t.Errorf("pass %v, control 1.33x: %+v", pass, v)
		}
		if v := needsIdleCore(bench.Verdict{Pass: pass}, report(1), makeIdleCore); v.Inconclusive {
			t.Errorf("pass %v, control 2x: %+v", pass, v)
		}
	}
}

// TestProdConsFlat: the heap's mapped bytes may not grow from the first
// half of prodcons to the second by more than a quarter, unless by no more
// than flatSlackMiB, a few spans carved a little later; a heap that grows
// by megabytes misses at whichever worker count it does.
func TestProdConsFlat(t *testing.T) {
	report := func(halves ...[2]float64) *bench.Report {
		r := &bench.Report{}
		var ws []int
		for i, h := range halves {
			w := 1 << i
			ws = append(ws, w)
			r.Summaries = append(r.Summaries, bench.Summary{Shape: "prodcons", Row: "offheap", Workers: w, Runs: 6, MinNs: 20,
				Metrics: map[string]float64{"mapped-1st-MiB": h[0], "mapped-2nd-MiB": h[1]}})
		}
		r.Shapes = append(r.Shapes, bench.ShapeInfo{Name: "prodcons", Workers: ws})
		return r
	}
	for _, tc := range []struct {
		halves  [][2]float64
		pass    bool
		workers string
	}{
		{[][2]float64{{0.039, 0.051}, {0.12, 0.12}}, true, "1"},  // 1.30x, 12 KiB more: span noise
		{[][2]float64{{0.039, 0.039}, {0.12, 0.13}}, true, "2"},  // 1.08x
		{[][2]float64{{0.039, 0.12}, {0.12, 0.12}}, false, "1"},  // 3x, 83 KiB more
		{[][2]float64{{0.12, 0.12}, {0.12, 2.5}}, false, "2"},    // grows by megabytes at 2 workers
		{[][2]float64{{0.039, 0.051}, {0.12, 0.30}}, false, "2"}, // the miss is reported, not the noise
	} {
		v := prodConsFlat(report(tc.halves...))
		if v.Pass != tc.pass || !strings.Contains(v.Measured, "at "+tc.workers+" worker") {
			t.Errorf("halves %v: pass %v, %q; want pass %v at %s worker(s)", tc.halves, v.Pass, v.Measured, tc.pass, tc.workers)
		}
	}
}

// TestDefragFloor checks the defragmentation rule's CPU verdict and the
// floor it states: 10,000 blocks moved at 100 ns each is 1 ms, against a
// workload of 90 ms whose rule took 10% (9 ms), so 1 ms of 82: 1.2%. The
// controls are a shape that measured no floor and a rule within its target.
func TestDefragFloor(t *testing.T) {
	report := func(cpu float64) *bench.Report {
		return &bench.Report{Summaries: []bench.Summary{{Shape: "frag", Row: "offheap-defrag", Workers: 1, Runs: 6,
			Metrics: map[string]float64{fragEvicted: 1.2, defragCPU: cpu, defragMoved: 10_000, defragWork: 90}}}}
	}
	vs := defragVerdicts(report(10), "frag", 100, fragEvicted)
	if len(vs) != 2 || !vs[0].Pass || vs[1].Pass || !strings.Contains(vs[1].Measured, "the moves' copies alone, 1.2%;") {
		t.Errorf("rule at 10%%, floor 1.2%%: %+v", vs)
	}
	if vs := defragVerdicts(report(10), "frag", 0, fragEvicted); strings.Contains(vs[1].Measured, "alone") {
		t.Errorf("no floor measured, yet the verdict states one: %q", vs[1].Measured)
	}
	if vs := defragVerdicts(report(1.5), "frag", 100, fragEvicted); !vs[1].Pass {
		t.Errorf("rule at 1.5%%: %+v", vs[1])
	}
}
