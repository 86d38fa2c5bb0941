package shapes

import (
	"fmt"
	"strings"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// The verdicts' common work: finding the cells a figure needs, and judging
// the figure against its target only as far as the run's noise allows.

// find is r.Find that also says what is missing.
func find(r *bench.Report, shape, sub, row string, w int) (*bench.Summary, string) {
	s := r.Find(shape, sub, row, w)
	if s == nil {
		name := shape
		if sub != "" {
			name += " " + sub
		}
		return nil, fmt.Sprintf("%s, %s at %d worker(s) not measured", name, row, w)
	}
	return s, ""
}

// missing joins the reasons find gave for the cells a verdict lacks.
func missing(whys ...string) string {
	var out []string
	for _, w := range whys {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, "; ")
}

// oneWorker judges row's time over other's, at one worker in shape and
// sub, against "at most limit": the figures that compare offheap with what
// programs use today.
func oneWorker(r *bench.Report, name, figure, shape, sub, row, other string, limit float64) bench.Verdict {
	return cellRatio(r, name, figure, shape, cell{sub, row}, cell{sub, other}, limit)
}

// cell names one row of one sub of a shape.
type cell struct{ sub, row string }

// cellRatio judges the time of cell a over that of cell b, both of shape
// and at one worker, against "at most limit".
func cellRatio(r *bench.Report, name, figure, shape string, ca, cb cell, limit float64) bench.Verdict {
	target := fmt.Sprintf("<= %.2fx", limit)
	a, why := find(r, shape, ca.sub, ca.row, 1)
	b, why2 := find(r, shape, cb.sub, cb.row, 1)
	if a == nil || b == nil {
		return bench.Skip(name, figure, target, missing(why, why2))
	}
	unit := "op"
	if info := r.Shape(shape); info != nil {
		unit = info.Unit
	}
	v := a.MinNs / b.MinNs
	return atMost(bench.Verdict{Name: name, Figure: figure, Target: target, Value: v,
		Measured: fmt.Sprintf("%.2fx (%s vs %s ns/%s)", v, bench.Num(a.MinNs), bench.Num(b.MinNs), unit)}, limit, a, b)
}

// noise is how far the minimum of a cell may be from the time its work
// takes undisturbed: the gap between its best run and its second best,
// relative, the largest over cells (0 for cells of one run). Noise on a
// shared machine only ever adds time, so when the two best runs agree the
// minimum is the undisturbed time; when they do not, the minimum may be a
// disturbed run too.
func noise(cells ...*bench.Summary) float64 {
	u := 0.0
	for _, c := range cells {
		if c != nil && c.NextNs > 0 && c.MinNs > 0 {
			u = max(u, c.NextNs/c.MinNs-1)
		}
	}
	return u
}

// atMost judges v.Value, a ratio of the cells' minimums, against the
// target "at most limit". Pass says whether the value met the limit. The
// verdict is not judged (Inconclusive) when the value is within the cells'
// noise of the limit: the same work, measured again, could land on the
// other side.
func atMost(v bench.Verdict, limit float64, cells ...*bench.Summary) bench.Verdict {
	return judge(v, limit, false, cells)
}

// atLeast is atMost for the target "at least limit".
func atLeast(v bench.Verdict, limit float64, cells ...*bench.Summary) bench.Verdict {
	return judge(v, limit, true, cells)
}

func judge(v bench.Verdict, limit float64, least bool, cells []*bench.Summary) bench.Verdict {
	u := noise(cells...)
	lo, hi := v.Value/(1+u), v.Value*(1+u) // where the undisturbed ratio lies
	v.Pass = v.Value <= limit
	clear := hi <= limit || lo > limit
	if least {
		v.Pass = v.Value >= limit
		clear = lo >= limit || hi < limit
	}
	if !clear {
		v.Inconclusive = true
		v.Note = fmt.Sprintf("too close to call (best two runs %.0f%% apart)", 100*u)
	}
	return v
}

// scalingAtMost judges v, a scaling figure (time at w workers over time at
// 1) of shape and sub, as atMost does, and adds to Measured what it needs
// beside it: the compute control's time at w workers over its time at 1,
// and the same for the shape's null row, where it has one (the same loop
// without the work measured). A figure that did not meet its limit is not
// judged when the machine did not give the run the workers' worth: the
// compute control below bench.MinControlSpeedup, or the null row over the
// limit too. A figure that met its limit has met it, however the machine
// did.
//
// The compute control is a chain of arithmetic; the null row's loop does
// what the measured one does (calls, loads, stores, barriers) and is run
// interleaved with it, so it sees a second vCPU that shares the first one's
// core, or is taken by a neighbour, when the control does not: measured
// here, the null loop of pairs scaled 0.64-0.89 in runs where the control
// scaled 0.52.
func scalingAtMost(v bench.Verdict, limit float64, r *bench.Report, shape, sub, null string, w int, cells ...*bench.Summary) bench.Verdict {
	v = atMost(v, limit, cells...)
	if sp, ok := r.ControlSpeedup(w); ok {
		v.Measured += fmt.Sprintf(", compute control %.2f", 1/sp)
	}
	nullMissed := false
	if n1, nw := r.Find(shape, sub, null, 1), r.Find(shape, sub, null, w); n1 != nil && nw != nil {
		nv := nw.MinNs / n1.MinNs
		v.Measured += fmt.Sprintf(", %s %.2f", null, nv)
		nullMissed = nv > limit
	}
	switch {
	case v.Pass: // met, or too close to call: the machine does not explain it
	case !r.Scaled():
		v.Inconclusive, v.Note = true, "machine did not scale"
	case nullMissed:
		v.Inconclusive, v.Note = true, "the "+null+" loop did not scale either"
	}
	return v
}

// needsIdleCore marks v, a figure judged against a row whose cost depends
// on a core left idle, not judged when the machine did not scale during the
// run. make's collector marks and sweeps on the Ps a one-goroutine program
// leaves idle, and a producer and its consumer run on two Ps: on a machine
// whose second core is taken, that row pays for what it otherwise gets for
// free, and the figure moves either way with the load, not with offheap
// (measured here: make 24-27 ns per pair in quiet runs, 45-99 ns in runs
// whose compute control did not scale). why is the row's reason, which the
// verdict's note gives: makeIdleCore or pairIdleCore.
func needsIdleCore(v bench.Verdict, r *bench.Report, why string) bench.Verdict {
	if !r.Scaled() {
		v.Inconclusive, v.Note = true, "machine did not scale, and "+why
	}
	return v
}

// The reasons a figure needs an idle core, as needsIdleCore's note gives
// them.
const (
	makeIdleCore = "make's collector works on the other core"
	pairIdleCore = "a producer and its consumer need a core each"
)
