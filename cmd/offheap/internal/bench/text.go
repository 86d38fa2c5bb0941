package bench

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
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
	{Name: MetricHitRate, Doc: "allocations served by a per-P magazine or a Local, in percent (offheap arms)"},
}

// Width is the most columns a line of the text report takes: a table too
// wide for it is split into tables that each repeat the workers and the row.
const Width = 100

// WriteLegend explains the table columns: the common ones, then metrics
// (a shape's own columns), each once, in order.
func WriteLegend(w io.Writer, metrics []Metric) error {
	ew := &errWriter{w: w}
	seen := map[string]bool{}
	var ms []Metric
	nameWidth := 0
	for _, m := range append(slices.Clone(legend), metrics...) {
		if !seen[m.Name] {
			seen[m.Name] = true
			ms = append(ms, m)
			nameWidth = max(nameWidth, len(m.Name))
		}
	}
	for _, m := range ms {
		WriteItem(ew, nameWidth, m.Name, m.Doc)
	}
	return ew.err
}

// WriteItem writes a name, padded to nameWidth, and what it means, wrapped
// to Width columns under its first line: a line of a legend or a list.
func WriteItem(w io.Writer, nameWidth int, name, doc string) {
	writeWrapped(w, fmt.Sprintf("  %-*s  ", nameWidth, name), strings.Repeat(" ", nameWidth+4), doc)
}

// writeWrapped writes text in lines of at most Width columns, breaking at
// spaces: the first line starts with first, the others with indent. A word
// longer than a line has a line of its own.
func writeWrapped(w io.Writer, first, indent, text string) {
	line, n := first, 0 // n: the words on line
	for _, word := range strings.Fields(text) {
		if n > 0 && len(line)+1+len(word) > Width {
			fmt.Fprintln(w, line)
			line, n = indent, 0
		}
		if n > 0 {
			line += " "
		}
		line += word
		n++
	}
	fmt.Fprintln(w, line)
}

// WriteText writes the report: what ran and how to read it, one table per
// shape and sub, then the verdicts and their tally.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	writeWrapped(ew, "", "  ", fmt.Sprintf("offheap bench: %s/%s, %s, GOMAXPROCS=%d, %s, %d runs%s, took %.1fs",
		r.GOOS, r.GOARCH, r.CPU, r.GOMAXPROCS, r.GoVersion, r.Runs, map[bool]string{true: ", -long sizes"}[r.Long], r.Elapsed.Seconds()))
	for _, name := range slices.Sorted(maps.Keys(r.Unavailable)) {
		writeWrapped(ew, "", "  ", fmt.Sprintf("arm %s: unavailable: %s", name, r.Unavailable[name]))
	}
	fmt.Fprintf(ew, "\nColumns:\n")
	var metrics []Metric
	for _, sh := range r.Shapes {
		metrics = append(metrics, sh.Metrics...)
	}
	WriteLegend(ew, metrics)
	if n := ScalingNotice(r); n != "" {
		fmt.Fprintln(ew)
		writeWrapped(ew, "!! ", "   ", n)
	}
	for _, sh := range r.Shapes {
		writeShape(ew, r, sh)
	}
	if len(r.Verdicts) > 0 {
		fmt.Fprintf(ew, "\n== verdicts: each figure against its target\n")
		writeVerdicts(ew, r.Verdicts)
		fmt.Fprintf(ew, "\n%s\n", Tally(r.Verdicts))
	}
	return ew.err
}

// writeVerdicts writes each verdict in lines of at most Width columns: its
// outcome and figure, then the target and what was measured, then why it
// was not judged, when it was not.
func writeVerdicts(w io.Writer, vs []Verdict) {
	const outcomeWidth = len(Missed) + 2
	indent := strings.Repeat(" ", outcomeWidth)
	for _, v := range vs {
		writeWrapped(w, fmt.Sprintf("%-*s", outcomeWidth, v.Outcome()), indent, v.Figure)
		measured := "target " + v.Target
		if d := verdictDetail(v); d != "" {
			measured += "; measured " + d
		}
		writeWrapped(w, indent, indent, measured)
		if why := strings.TrimPrefix(v.Status(), NotJudged+": "); v.Outcome() == NotJudged {
			writeWrapped(w, indent+"why: ", indent+"     ", why)
		}
	}
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
	fmt.Fprintln(w)
	writeWrapped(w, "", "   ", fmt.Sprintf("== %s (%s): %s", sh.Name, sh.Work, sh.Doc))
	for _, sub := range sh.Subs {
		title := sh.Name
		if sub != "" {
			title += " " + sub
		}
		fmt.Fprintf(w, "-- %s: ns/%s, min and median of %d runs\n", title, sh.Unit, sh.Runs)
		cols := columns(r, sh, sub)
		table := [][]string{nil} // the heads, then a row of cells per summary
		for _, c := range cols {
			table[0] = append(table[0], c.head)
		}
		for wi, nw := range sh.Workers {
			for ri, row := range sh.Rows {
				s := r.Find(sh.Name, sub, row, nw)
				if s == nil {
					continue
				}
				var cells []string
				for _, c := range cols {
					cells = append(cells, c.cell(s, wi, ri))
				}
				table = append(table, cells)
			}
		}
		writeTable(w, table, fmt.Sprintf("-- %s, continued", title))
	}
}

// writeTable writes table's columns right-aligned, two spaces apart. Where
// they do not fit in Width columns, the first two (the workers and the row)
// begin each of as many tables as it takes, each after a line that says
// more, and the other columns fill them in order.
func writeTable(w io.Writer, table [][]string, more string) {
	const keys, gap = 2, 2
	widths := make([]int, len(table[0]))
	for _, cells := range table {
		for i, c := range cells {
			widths[i] = max(widths[i], len(c))
		}
	}
	keyWidth := 0
	for i := range min(keys, len(widths)) {
		keyWidth += gap + widths[i]
	}
	var groups [][]int // the columns of each table, after the keys
	used := Width      // columns used by the last group
	for i := keys; i < len(widths); i++ {
		if used+gap+widths[i] > Width {
			groups = append(groups, nil)
			used = keyWidth
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], i)
		used += gap + widths[i]
	}
	if len(groups) == 0 {
		groups = [][]int{nil}
	}
	for gi, g := range groups {
		if gi > 0 {
			fmt.Fprintln(w, more)
		}
		cols := append([]int{}, g...)
		for i := min(keys, len(widths)) - 1; i >= 0; i-- {
			cols = append([]int{i}, cols...)
		}
		for _, cells := range table {
			var b strings.Builder
			for _, i := range cols {
				fmt.Fprintf(&b, "%*s", gap+widths[i], cells[i])
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
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
