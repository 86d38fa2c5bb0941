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

// The arms every table compares against, when they ran: the allocator with
// magazines off (what every speed claim is measured against) and make.
const (
	BaselineArm = "offheap-nomag"
	MakeArm     = "go-make"
)

// WriteText writes the report as one table per shape and sub, then the
// verdicts. Times are ns per op, minimum and median over the runs; ratios
// compare minimums at the same worker count (below 1 is faster).
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "offheap bench: %s/%s, %s, GOMAXPROCS=%d, %s, %d runs%s, took %.1fs\n",
		r.GOOS, r.GOARCH, r.CPU, r.GOMAXPROCS, r.GoVersion, r.Runs, map[bool]string{true: ", -long sizes"}[r.Long], r.Elapsed.Seconds())
	for _, name := range slices.Sorted(maps.Keys(r.Unavailable)) {
		fmt.Fprintf(ew, "arm %s: unavailable: %s\n", name, r.Unavailable[name])
	}
	for _, sh := range r.Shapes {
		writeShape(ew, r, sh)
	}
	if len(r.Verdicts) > 0 {
		fmt.Fprintf(ew, "\n== verdicts\n")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		for _, v := range r.Verdicts {
			status := v.Status()
			detail := v.Measured
			if v.Skipped != "" {
				detail = v.Skipped
			}
			if v.Note != "" {
				detail += " (" + v.Note + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\ttarget %s\t%s\n", status, v.Figure, v.Target, detail)
		}
		tw.Flush()
	}
	return ew.err
}

func writeShape(w io.Writer, r *Report, sh ShapeInfo) {
	fmt.Fprintf(w, "\n== %s (%s): %s\n", sh.Name, sh.Work, sh.Doc)
	scaling := sh.Work == FixedTotal && len(sh.Workers) > 1 && !sh.Control
	if scaling && !r.Scaled() {
		fmt.Fprintf(w, "!! this machine did not scale: read no scaling from it (compute control below %.1fx at 2 workers)\n", MinControlSpeedup)
	}
	// The ratio columns: the baseline arms for arm shapes, the first way
	// for shapes with rows of their own.
	var refs []string
	if sh.RowKey == "arm" {
		for _, ref := range []string{BaselineArm, MakeArm} {
			if slices.Contains(sh.Rows, ref) {
				refs = append(refs, ref)
			}
		}
	} else if len(sh.Rows) > 1 {
		refs = []string{sh.Rows[0]}
	}
	for _, sub := range sh.Subs {
		title := sh.Name
		if sub != "" {
			title += " " + sub
		}
		fmt.Fprintf(w, "-- %s: ns/%s, min and median of %d runs\n", title, sh.Unit, r.Runs)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		hdr := []string{"workers", sh.RowKey, "min", "median"}
		for _, ref := range refs {
			hdr = append(hdr, "x"+ref)
		}
		if len(sh.Workers) > 1 {
			hdr = append(hdr, "t/t1")
			if scaling {
				hdr = append(hdr, "ctl-speedup")
			}
		}
		hdr = append(hdr, sh.Metrics...)
		hasHit := false
		for _, row := range sh.Rows {
			if s := r.Find(sh.Name, sub, row, sh.Workers[0]); s != nil {
				if _, ok := s.Metrics[MetricHitRate]; ok {
					hasHit = true
				}
			}
		}
		if hasHit && !slices.Contains(sh.Metrics, MetricHitRate) {
			hdr = append(hdr, MetricHitRate)
		}
		fmt.Fprintln(tw, strings.Join(hdr, "\t")+"\t")
		for wi, nw := range sh.Workers {
			for ri, row := range sh.Rows {
				s := r.Find(sh.Name, sub, row, nw)
				if s == nil {
					continue
				}
				cells := []string{"", row, Num(s.MinNs), Num(s.MedianNs)}
				if ri == 0 {
					cells[0] = fmt.Sprint(nw)
				}
				for _, ref := range refs {
					if b := r.Find(sh.Name, sub, ref, nw); b != nil {
						cells = append(cells, fmt.Sprintf("%.2fx", s.MinNs/b.MinNs))
					} else {
						cells = append(cells, "-")
					}
				}
				if len(sh.Workers) > 1 {
					if one := r.Find(sh.Name, sub, row, sh.Workers[0]); one != nil && wi > 0 {
						cells = append(cells, fmt.Sprintf("%.2f", s.MinNs/one.MinNs))
					} else {
						cells = append(cells, "")
					}
					if scaling {
						c := ""
						if sp, ok := r.ControlSpeedup(nw); ok && ri == 0 && nw > 1 {
							c = fmt.Sprintf("%.2fx", sp)
						}
						cells = append(cells, c)
					}
				}
				for _, m := range hdr[len(cells):] {
					if v, ok := s.Metrics[m]; ok {
						cells = append(cells, Num(v))
					} else {
						cells = append(cells, "-")
					}
				}
				fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
			}
		}
		tw.Flush()
	}
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
