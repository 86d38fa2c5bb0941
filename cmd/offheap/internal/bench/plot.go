package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot sizes: one panel per sub, a column on the right for the legend, so
// that it never covers the data, and a margin on the left for labels drawn
// in a wider font than the one they were measured in.
const (
	plotWidth   = 18 * vg.Centimeter
	panelHeight = 9 * vg.Centimeter
	legendWidth = 4.5 * vg.Centimeter
	labelSize   = 10 * vg.Inch / 72 // points, for axis labels and the legend
	leftMargin  = 8 * vg.Millimeter
	topMargin   = 4 * vg.Millimeter // room for the first panel's title
)

// The plots are set in Liberation Sans, which has Arial's metrics: a
// viewer without it draws them in Arial or Helvetica, as wide as the
// layout measured them (svgFonts adds those names).
func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// svgFonts gives the SVG's font the metric-compatible fallbacks.
func svgFonts(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte("font-family:Liberation Sans;"), []byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;"))
}

// palette is the rows' colours: ten that differ in hue and lightness
// (Tableau 10), so that neighbours in a legend, and lines that cross, are
// told apart.
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, // blue
	color.RGBA{0xf2, 0x8e, 0x2b, 0xff}, // orange
	color.RGBA{0xe1, 0x57, 0x59, 0xff}, // red
	color.RGBA{0x76, 0xb7, 0xb2, 0xff}, // teal
	color.RGBA{0x59, 0xa1, 0x4f, 0xff}, // green
	color.RGBA{0xed, 0xc9, 0x48, 0xff}, // yellow
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, // purple
	color.RGBA{0xff, 0x9d, 0xa7, 0xff}, // pink
	color.RGBA{0x9c, 0x75, 0x5f, 0xff}, // brown
	color.RGBA{0xba, 0xb0, 0xac, 0xff}, // grey
}

// rowStyle is the index of row's colour, dashes and glyph: an arm's place
// among every arm of the report, so that an arm looks the same in every
// plot, or a way's place among its shape's.
func rowStyle(r *Report, sh ShapeInfo, row string) int {
	rows := sh.Rows
	if sh.RowKey == "arm" {
		rows = nil
		for _, s := range r.Shapes {
			for _, a := range s.Rows {
				if s.RowKey == "arm" && !slices.Contains(rows, a) {
					rows = append(rows, a)
				}
			}
		}
	}
	return max(slices.Index(rows, row), 0)
}

// rowColor is the colour of style i.
func rowColor(i int) color.Color { return palette[i%len(palette)] }

// WritePlot draws one shape as an SVG, one panel per sub. A sub measured
// at several worker counts gets a line per row: workers on x, ns per op on
// a log y axis (minimum of the runs). A sub measured at one worker count
// gets a horizontal bar per row, of ns per op, or a panel of bars for each
// metric the shape plots (Spec.Plot, median of the runs). Every value axis
// says whether lower or higher is better; a row has one colour in every
// plot.
func WritePlot(w io.Writer, r *Report, sh ShapeInfo) error {
	var panels []*plot.Plot
	var legends []plot.Legend
	var lined []bool
	// A panel per sub, or per sub and plotted metric; "" is ns per op.
	type panel struct{ sub, metric string }
	var want []panel
	for _, sub := range sh.Subs {
		if len(sh.Plot) == 0 {
			want = append(want, panel{sub, ""})
		}
		for _, m := range sh.Plot {
			want = append(want, panel{sub, m})
		}
		if sh.Scaling > 0 && (sh.ScalingSub == "" || sh.ScalingSub == sub) && slices.Contains(measuredWorkers(r, sh, sub), 2) && slices.Contains(measuredWorkers(r, sh, sub), 1) {
			want = append(want, panel{sub, scalingPanel})
		}
	}
	for _, pn := range want {
		sub := pn.sub
		lines := pn.metric == "" && len(measuredWorkers(r, sh, sub)) > 1
		p := plot.New()
		p.X.Label.TextStyle.Font.Size = labelSize
		p.Y.Label.TextStyle.Font.Size = labelSize
		p.Title.Text = sh.Name
		if sub != "" {
			p.Title.Text += " " + sub
		}
		var err error
		if lines {
			err = linePanel(p, r, sh, sub)
		} else {
			err = barPanel(p, r, sh, sub, pn.metric)
		}
		if err != nil {
			return err
		}
		legends = append(legends, p.Legend)
		p.Legend = plot.NewLegend() // drawn beside the panel instead
		panels = append(panels, p)
		lined = append(lined, lines)
	}
	anyLines := slices.Contains(lined, true)
	img := vgsvg.New(plotWidth, panelHeight*vg.Length(len(panels)))
	dc := draw.New(img)
	plotArea := draw.Crop(dc, leftMargin, 0, 0, -topMargin)
	if anyLines {
		plotArea = draw.Crop(plotArea, 0, -legendWidth, 0, 0)
	}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Centimeter / 2}, plotArea)
	for i, p := range panels {
		c := canvases[i][0]
		p.Draw(c)
		if lined[i] {
			l := legends[i]
			l.Top, l.Left = true, true
			l.TextStyle.Font.Size = labelSize
			l.Padding = vg.Millimeter
			col := c
			col.Min.X, col.Max.X = dc.Max.X-legendWidth+vg.Millimeter*2, dc.Max.X
			col.Max.Y -= vg.Centimeter
			l.Draw(col)
		}
	}
	var buf bytes.Buffer
	if _, err := img.WriteTo(&buf); err != nil {
		return err
	}
	_, err := w.Write(svgFonts(buf.Bytes()))
	return err
}

// linePanel draws one sub as a line per row over the worker counts.
func linePanel(p *plot.Plot, r *Report, sh ShapeInfo, sub string) error {
	p.X.Label.Text = "workers (" + string(sh.Work) + ")"
	p.Title.Text += " (min of the runs, log scale)"
	p.Y.Label.Text = "ns per " + sh.Unit + ": lower is better"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	var ticks []plot.Tick
	for _, nw := range measuredWorkers(r, sh, sub) {
		ticks = append(ticks, plot.Tick{Value: float64(nw), Label: fmt.Sprint(nw)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	for _, row := range sh.Rows {
		var xys plotter.XYs
		for _, nw := range sh.Workers {
			if s := r.Find(sh.Name, sub, row, nw); s != nil && s.MinNs > 0 {
				xys = append(xys, plotter.XY{X: float64(nw), Y: s.MinNs})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		i := rowStyle(r, sh, row)
		l.Color, l.Dashes = rowColor(i), plotutil.Dashes(i)
		pts.Color, pts.Shape = rowColor(i), plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(row, l, pts)
	}
	// Room around the data, so that no point sits on the frame.
	p.Y.Min /= 1.3
	p.Y.Max *= 1.3
	return nil
}

// measuredWorkers returns the worker counts at which some row of sub was
// measured.
func measuredWorkers(r *Report, sh ShapeInfo, sub string) []int {
	var ws []int
	for _, nw := range sh.Workers {
		for _, row := range sh.Rows {
			if r.Find(sh.Name, sub, row, nw) != nil {
				ws = append(ws, nw)
				break
			}
		}
	}
	return ws
}

// barPanel draws one sub as a horizontal bar per row, at the shape's first
// worker count: of ns per op, or of metric where it is not "" (a row
// without that metric has no bar). The row names are the y axis labels,
// where they have the room they need.
func barPanel(p *plot.Plot, r *Report, sh ShapeInfo, sub, metric string) error {
	nw := sh.Workers[0]
	stat, label := "min", fmt.Sprintf("ns per %s: lower is better", sh.Unit)
	value := func(s *Summary) (float64, bool) { return s.MinNs, true }
	target := 0.0
	if metric == scalingPanel {
		// Time at 2 workers over time at 1, per row: 0.5 is perfect
		// scaling, 1 none.
		nw, target = 2, sh.Scaling
		label = fmt.Sprintf("time at 2 workers / at 1, target %s dashed", tickLabel(target))
		value = func(s *Summary) (float64, bool) {
			one := r.Find(sh.Name, sub, s.Row, 1)
			if one == nil || one.MinNs <= 0 {
				return 0, false
			}
			return s.MinNs / one.MinNs, true
		}
	} else if metric != "" {
		m := metricOf(sh, metric)
		stat = "median"
		label = fmt.Sprintf("%s: %s is better", m.Label, map[bool]string{true: "higher", false: "lower"}[m.HigherIsBetter])
		value = func(s *Summary) (float64, bool) { v, ok := s.Metrics[metric]; return v, ok }
		if target = m.Target; target > 0 {
			label += fmt.Sprintf(", target %s dashed", tickLabel(target))
		}
	}
	workers := "workers"
	if nw == 1 {
		workers = "worker"
	}
	if metric == scalingPanel {
		p.Title.Text += fmt.Sprintf(" scaling (%s of the runs)", stat)
	} else {
		p.Title.Text += fmt.Sprintf(" (%d %s, %s of the runs)", nw, workers, stat)
	}
	// Bottom to top, so that the first row is at the top, as in the table.
	var names []string
	var values []float64
	for i := len(sh.Rows) - 1; i >= 0; i-- {
		if s := r.Find(sh.Name, sub, sh.Rows[i], nw); s != nil {
			if v, ok := value(s); ok {
				names = append(names, sh.Rows[i])
				values = append(values, v)
			}
		}
	}
	p.X.Label.Text = label
	if len(values) == 0 {
		return nil
	}
	// Each name ends in two spaces: room between it and its bar in a
	// viewer whose fallback font is wider than the one measured.
	padded := make([]string, len(names))
	for i, n := range names {
		padded[i] = n + "  "
	}
	p.NominalY(padded...)
	// Bars that span decades are drawn on a log axis, where a linear one
	// would leave all but the longest invisible; each then starts at base,
	// below the shortest, since a log axis has no 0.
	var base *plotter.BarChart
	lo, hi := slices.Min(values), slices.Max(values)
	if target > 0 {
		lo, hi = min(lo, target), max(hi, target)
	}
	if lo > 0 && hi/lo >= 20 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		p.X.Label.Text += " (log scale)"
		p.X.Min, p.X.Max = lo/2, hi*1.5
		var err error
		if base, err = plotter.NewBarChart(plotter.Values{lo / 2}, vg.Points(18)); err != nil {
			return err
		}
	} else {
		p.X.Tick.Marker = linearTicks{}
		p.X.Min, p.X.Max = 0, hi*1.1
	}
	// A bar per row, in the row's colour.
	for i, v := range values {
		if base != nil {
			v -= base.Values[0]
		}
		bar, err := plotter.NewBarChart(plotter.Values{v}, vg.Points(18))
		if err != nil {
			return err
		}
		if base != nil {
			bar.StackOn(base) // base is not drawn: it only lifts the bar's start
		}
		bar.Horizontal = true
		bar.XMin = float64(i)
		bar.Color = rowColor(rowStyle(r, sh, names[i]))
		bar.LineStyle.Width = 0
		p.Add(bar)
	}
	if target > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: target, Y: -0.5}, {X: target, Y: float64(len(values)) - 0.5}})
		if err != nil {
			return err
		}
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	return nil
}

// scalingPanel is the panel key of a shape's scaling figure (Spec.Scaling).
const scalingPanel = "\x00scaling"

// metricOf returns the shape's metric called name, with its name for a
// label where it has none.
func metricOf(sh ShapeInfo, name string) Metric {
	m := Metric{Name: name}
	for _, sm := range sh.Metrics {
		if sm.Name == name {
			m = sm
		}
	}
	if m.Label == "" {
		m.Label = name
	}
	return m
}

// linearTicks labels four to seven steps of 1, 2 or 5 times a power of
// ten (plot.DefaultTicks aims at three): few enough that labels of five
// digits never touch on a panel's width.
type linearTicks struct{}

// Ticks implements plot.Ticker.
func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: tickLabel(lo)}}
	}
	mag := math.Pow(10, math.Floor(math.Log10((hi-lo)/4)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; (hi-lo)/step <= 7 {
			break
		}
	}
	var ts []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi; i++ {
		v := i * step // a multiple of step, not a sum of them: 0 is 0, not -5.551e-17
		ts = append(ts, plot.Tick{Value: v, Label: tickLabel(v)})
	}
	return ts
}

// tickLabel writes a tick's value as briefly as it can: 0.5, 2, 20, 200,
// 5000, 50k, 2M (not 5e+04).
func tickLabel(v float64) string {
	switch {
	case v >= 1e6 && v == math.Trunc(v/1e5)*1e5:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4 && v == math.Trunc(v/100)*100:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case v >= 1 && v < 1e7 && v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// logTicks labels 1, 2 and 5 times each power of ten within the range (the
// powers alone past a ratio of 30), and marks the other integer multiples
// as minor ticks: an axis that spans less than a decade and a half still
// gets several labels (plot.LogTicks labels only the powers of ten).
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	// Past a ratio of 30, 2 and 5 would crowd the labels of a bar panel's
	// width (half the plot's, beside a legend column) into each other,
	// "5000" into "10k": label the powers of ten alone.
	wide := hi/lo > 30
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				t.Label = tickLabel(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}
