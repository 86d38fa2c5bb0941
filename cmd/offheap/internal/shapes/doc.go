// Package shapes holds the workload shapes `offheap bench` runs, one file
// each. Each file registers its shape (and the verdicts that judge it) with
// the bench package in init; importing the package for its side effects
// makes them all available.
//
// The worker loops follow the same rules everywhere: everything a worker
// touches in its loop is a local (the arm handle, sizes, counters), results
// go to a bench.Padded slot of their own, and bench.Parallel releases the
// workers together from a barrier and times to the last one done.
package shapes

import (
	"fmt"
	"strings"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// ratio formats a/b and reports whether it is at most limit.
func ratio(a, b, limit float64) (float64, string, bool) {
	r := a / b
	return r, fmt.Sprintf("%.2fx", r), r <= limit
}

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

// scaling is what a scaling figure v (time at w workers over time at 1) for
// shape and sub needs beside it: the compute control's time at w workers
// over its time at 1, and the same for the shape's null row where it has
// one (the same loop with no allocator). It returns them as text for
// Measured. A figure over its limit is inconclusive, with a short note (a
// report prints it after "not judged: "), when the machine did not give the
// run the workers' worth: the compute control below
// bench.MinControlSpeedup, or the null row over the limit too. A figure that
// met its limit has met it, however the machine did.
//
// The compute control is a chain of arithmetic; the null row's loop does
// what the measured one does (calls, loads, stores, barriers) and is run
// interleaved with it, so it sees a second vCPU that shares the first one's
// core, or is taken by a neighbour, when the control does not: measured
// here, the null loop of pairs scaled 0.64-0.89 in runs where the control
// scaled 0.52.
func scaling(r *bench.Report, shape, sub string, w int, v, limit float64) (measured, note string, inconclusive bool) {
	if sp, ok := r.ControlSpeedup(w); ok {
		measured += fmt.Sprintf(", compute control %.2f", 1/sp)
	}
	nullMissed := false
	if n1, nw := r.Find(shape, sub, "null", 1), r.Find(shape, sub, "null", w); n1 != nil && nw != nil {
		nv := nw.MinNs / n1.MinNs
		measured += fmt.Sprintf(", null %.2f", nv)
		nullMissed = nv > limit
	}
	switch {
	case v <= limit:
		return measured, "", false
	case !r.Scaled():
		return measured, "machine did not scale", true
	case nullMissed:
		return measured, "the null loop did not scale either", true
	}
	return measured, "", false
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
