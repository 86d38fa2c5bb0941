package bench_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// TestPlotScaling: a shape with a scaling target (pairs, arena) plots its
// scaling figure against it, and one without (larson) does not. Positive
// control: with larson given a target, its plot has the panel too.
func TestPlotScaling(t *testing.T) {
	r := fullReport(t)
	const panel = "time at 2 workers / at 1, target"
	for _, c := range []struct {
		shape   string
		scaling float64
		want    bool
	}{{"pairs", 0, true}, {"arena", 0, true}, {"larson", 0, false}, {"larson", 0.5, true}} {
		sh := *r.Shape(c.shape)
		if c.scaling > 0 {
			sh.Scaling = c.scaling
		}
		var svg strings.Builder
		if err := bench.WritePlot(&svg, r, sh); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(svg.String(), panel); got != c.want {
			t.Errorf("%s.svg (scaling %v): has the scaling panel %v, want %v", c.shape, sh.Scaling, got, c.want)
		}
	}
}

// TestPlotColours: every row of a shape's plot has a colour of its own, and
// an arm has the same colour in every plot; no tick reads as a float's
// rounding error.
func TestPlotColours(t *testing.T) {
	r := fullReport(t)
	hex := regexp.MustCompile(`#[0-9A-F]{6}`)
	colourOf := map[string]string{} // arm -> its colour, from the plots so far
	for _, sh := range r.Shapes {
		var svg strings.Builder
		if err := bench.WritePlot(&svg, r, sh); err != nil {
			t.Fatal(err)
		}
		if tiny := regexp.MustCompile(`>-?[0-9.]+e-[0-9]+<`).FindString(svg.String()); tiny != "" {
			t.Errorf("%s.svg: a tick label %s, a float's rounding error", sh.Name, tiny)
		}
		colours := map[string]bool{}
		for _, c := range hex.FindAllString(svg.String(), -1) {
			if c != "#000000" && c != "#FFFFFF" {
				colours[c] = true
			}
		}
		if rows := plotted(r, sh); len(rows) <= 10 && len(colours) != len(rows) {
			t.Errorf("%s.svg: %d colours for %d rows %v", sh.Name, len(colours), len(rows), rows)
		}
		if sh.RowKey != "arm" || len(sh.Subs) == 0 {
			continue
		}
		// The arm's colour: draw the shape with that arm alone.
		for _, arm := range sh.Rows {
			one := sh
			one.Rows = []string{arm}
			var b strings.Builder
			if err := bench.WritePlot(&b, r, one); err != nil {
				t.Fatal(err)
			}
			var c string
			for _, h := range hex.FindAllString(b.String(), -1) {
				if h != "#000000" && h != "#FFFFFF" {
					c = h
				}
			}
			if prev, ok := colourOf[arm]; ok && prev != c {
				t.Errorf("arm %s is %s in %s.svg, %s before", arm, c, sh.Name, prev)
			}
			colourOf[arm] = c
		}
	}
}

// plotted returns the rows of sh that its plot draws: every row, or where
// the shape plots metrics, the rows with one of them in some sample (a row
// without the metric has no bar: a tiny run may not measure it).
func plotted(r *bench.Report, sh bench.ShapeInfo) []string {
	if len(sh.Plot) == 0 {
		return sh.Rows
	}
	var rows []string
	for _, row := range sh.Rows {
		has := false
		for _, sub := range sh.Subs {
			for _, w := range sh.Workers {
				if s := r.Find(sh.Name, sub, row, w); s != nil {
					for _, m := range sh.Plot {
						_, ok := s.Metrics[m]
						has = has || ok
					}
				}
			}
		}
		if has {
			rows = append(rows, row)
		}
	}
	return rows
}
