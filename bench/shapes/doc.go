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

	"github.com/offheap/offheap/bench"
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
		return nil, fmt.Sprintf("not measured: %s, %s, %d worker(s) (select the shape and arm to get it)", name, row, w)
	}
	return s, ""
}
