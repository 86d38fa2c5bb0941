package bench

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// The arms every arm shape's table compares against, when they ran: the
// allocator with magazines off (what every speed claim is measured against)
// and make.
const (
	BaselineArm = "offheap-nomag"
	MakeArm     = "go-make"
)

// legend explains the columns every table may have; a shape's own metrics
// follow them.
var legend = []Metric{
	{Name: "min, median", Doc: "time per op (the unit is in the table's title), fastest and median of the runs, in ns; lower is better"},
	{Name: "x<row>", Doc: "this row's min / that row's min at the same worker count: 0.25x is four times as fast"},
	{Name: "t/t1", Doc: "this row's min / its own min at 1 worker; with fixed total work, 0.50 at 2 workers is perfect scaling"},
	{Name: "ctl-speedup", Doc: "the compute control's speedup at this worker count: how far this machine scaled a loop with no memory traffic"},
	{Name: MetricHitRate, Doc: "allocations served by a per-P magazine or a Cache, in percent (offheap arms)"},
}

// WriteLegend explains the table columns: the common ones, then metrics
// (a shape's own columns), each once, in order.
func WriteLegend(w io.Writer, metrics []Metric) error {
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	seen := map[string]bool{}
	for _, m := range append(slices.Clone(legend), metrics...) {
		if !seen[m.Name] {
			seen[m.Name] = true
			fmt.Fprintf(tw, "  %s\t%s\n", m.Name, m.Doc)
		}
	}
	tw.Flush()
	return ew.err
}

// WriteText writes the report: what ran and how to read it, one table per
// shape and sub, then the verdicts and their tally.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "offheap bench: %s/%s, %s, GOMAXPROCS=%d, %s, %d runs%s, took %.1fs\n",
		r.GOOS, r.GOARCH, r.CPU, r.GOMAXPROCS, r.GoVersion, r.Runs, map[bool]string{true: ", -long sizes"}[r.Long], r.Elapsed.Seconds())
	for _, name := range slices.Sorted(maps.Keys(r.Unavailable)) {
		fmt.Fprintf(ew, "arm %s: unavailable: %s\n", name, r.Unavailable[name])
	}
	fmt.Fprintf(ew, "\nColumns:\n")
	var metrics []Metric
	for _, sh := range r.Shapes {
		metrics = append(metrics, sh.Metrics...)
	}
	WriteLegend(ew, metrics)
	if n := ScalingNotice(r); n != "" {
		fmt.Fprintf(ew, "\n!! %s\n", n)
	}
	for _, sh := range r.Shapes {
		writeShape(ew, r, sh)
	}
	if len(r.Verdicts) > 0 {
		fmt.Fprintf(ew, "\n== verdicts: each figure against its target\n")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		for _, v := range r.Verdicts {
			fmt.Fprintf(tw, "%s\t%s\ttarget %s\t%s\n", v.Status(), v.Figure, v.Target, verdictDetail(v))
		}
		tw.Flush()
		fmt.Fprintf(ew, "\n%s\n", Tally(r.Verdicts))
	}
	return ew.err
}

// ScalingNotice is the one warning a report gives when the machine did not
// scale during the run, or "".
func ScalingNotice(r *Report) string {
	sp, ok := r.ControlSpeedup(2)
	if !ok || sp >= MinControlSpeedup {
		return ""
	}
	return fmt.Sprintf("This machine did not scale during this run: the compute control ran %.2fx as fast at 2 workers as at 1, "+
		"below %.1fx (a loaded or throttled machine, or one core). Read no scaling from the tables; the targets this affects are not judged.",
		sp, MinControlSpeedup)
}

// verdictDetail is what a verdict line shows after its target.
func verdictDetail(v Verdict) string {
	if v.Skipped != "" {
		return ""
	}
	return v.Measured
}

// column is one column of a shape's table: its heading and its cell for
// the summary s of row ri at worker count index wi.
type column struct {
	head string
	cell func(s *Summary, wi, ri int) string
}

// writeShape writes one shape's tables, one per sub.
func writeShape(w io.Writer, r *Report, sh ShapeInfo) {
	fmt.Fprintf(w, "\n== %s (%s): %s\n", sh.Name, sh.Work, sh.Doc)
	for _, sub := range sh.Subs {
		title := sh.Name
		if sub != "" {
			title += " " + sub
		}
		fmt.Fprintf(w, "-- %s: ns/%s, min and median of %d runs\n", title, sh.Unit, r.Runs)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		cols := columns(r, sh, sub)
		var cells []string
		for _, c := range cols {
			cells = append(cells, c.head)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		for wi, nw := range sh.Workers {
			for ri, row := range sh.Rows {
				s := r.Find(sh.Name, sub, row, nw)
				if s == nil {
					continue
				}
				cells = cells[:0]
				for _, c := range cols {
					cells = append(cells, c.cell(s, wi, ri))
				}
				fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
			}
		}
		tw.Flush()
	}
}

// columns lists the columns of one sub's table: the workers, the row, the
// times, ratios to the reference rows, the scaling, and the metrics.
func columns(r *Report, sh ShapeInfo, sub string) []column {
	cols := []column{
		{"workers", func(s *Summary, _, ri int) string {
			if ri == 0 {
				return fmt.Sprint(s.Workers)
			}
			return ""
		}},
		{sh.RowKey, func(s *Summary, _, _ int) string { return s.Row }},
		{"min", func(s *Summary, _, _ int) string { return Num(s.MinNs) }},
		{"median", func(s *Summary, _, _ int) string { return Num(s.MedianNs) }},
	}
	for _, ref := range refRows(sh) {
		cols = append(cols, column{"x" + ref, func(s *Summary, _, _ int) string {
			if b := r.Find(sh.Name, sub, ref, s.Workers); b != nil {
				return fmt.Sprintf("%.2fx", s.MinNs/b.MinNs)
			}
			return "-"
		}})
	}
	if len(sh.Workers) > 1 {
		cols = append(cols, column{"t/t1", func(s *Summary, wi, _ int) string {
			if one := r.Find(sh.Name, sub, s.Row, sh.Workers[0]); one != nil && wi > 0 {
				return fmt.Sprintf("%.2f", s.MinNs/one.MinNs)
			}
			return ""
		}})
	}
	if sh.Work == FixedTotal && len(sh.Workers) > 1 && !sh.Control {
		cols = append(cols, column{"ctl-speedup", func(s *Summary, _, ri int) string {
			if sp, ok := r.ControlSpeedup(s.Workers); ok && ri == 0 && s.Workers > 1 {
				return fmt.Sprintf("%.2fx", sp)
			}
			return ""
		}})
	}
	for _, m := range metricNames(r, sh, sub) {
		cols = append(cols, column{m, func(s *Summary, _, _ int) string {
			if v, ok := s.Metrics[m]; ok {
				return Num(v)
			}
			return "-"
		}})
	}
	return cols
}

// refRows are the rows a table gives ratio columns for: the baseline arms
// for arm shapes, the first way for shapes with ways of their own.
func refRows(sh ShapeInfo) []string {
	if sh.RowKey == "arm" {
		var refs []string
		for _, ref := range []string{BaselineArm, MakeArm} {
			if slices.Contains(sh.Rows, ref) {
				refs = append(refs, ref)
			}
		}
		return refs
	}
	if len(sh.Rows) > 1 {
		return sh.Rows[:1]
	}
	return nil
}

// metricNames are the metric columns of one sub's table: the shape's own,
// then the magazine hit rate when an offheap arm reported one.
func metricNames(r *Report, sh ShapeInfo, sub string) []string {
	var names []string
	for _, m := range sh.Metrics {
		names = append(names, m.Name)
	}
	if slices.Contains(names, MetricHitRate) {
		return names
	}
	for _, row := range sh.Rows {
		if s := r.Find(sh.Name, sub, row, sh.Workers[0]); s != nil {
			if _, ok := s.Metrics[MetricHitRate]; ok {
				return append(names, MetricHitRate)
			}
		}
	}
	return names
}

// Num formats a measurement with three significant digits or so.
func Num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1e6:
		return fmt.Sprintf("%.3g", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a < 0.1:
		return fmt.Sprintf("%.2g", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// errWriter keeps the first write error so that report code can write
// freely and check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, nil
}
