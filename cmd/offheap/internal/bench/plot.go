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
// gets a horizontal bar per row, of ns per op or of the metric the shape
// plots (Spec.Plot, median of the runs). Every value axis says whether
// lower or higher is better; a row has one colour in every plot.
func WritePlot(w io.Writer, r *Report, sh ShapeInfo) error {
	var panels []*plot.Plot
	var legends []plot.Legend
	var lined []bool
	for _, sub := range sh.Subs {
		lines := sh.Plot == "" && len(measuredWorkers(r, sh, sub)) > 1
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
			err = barPanel(p, r, sh, sub)
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
	plotArea := draw.Crop(dc, leftMargin, 0, 0, 0)
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
// worker count; the row names are the y axis labels, where they have the
// room they need.
func barPanel(p *plot.Plot, r *Report, sh ShapeInfo, sub string) error {
	nw := sh.Workers[0]
	stat, label := "min", fmt.Sprintf("ns per %s: lower is better", sh.Unit)
	value := func(s *Summary) float64 { return s.MinNs }
	if sh.Plot != "" {
		m := metricOf(sh, sh.Plot)
		stat = "median"
		label = fmt.Sprintf("%s: %s is better", m.Label, map[bool]string{true: "higher", false: "lower"}[m.HigherIsBetter])
		value = func(s *Summary) float64 { return s.Metrics[sh.Plot] }
	}
	p.Title.Text += fmt.Sprintf(" (%d worker, %s of the runs)", nw, stat)
	var names []string
	// Bottom to top, so that the first row is at the top, as in the table;
	// a bar per row, in the row's colour.
	for i := len(sh.Rows) - 1; i >= 0; i-- {
		s := r.Find(sh.Name, sub, sh.Rows[i], nw)
		if s == nil {
			continue
		}
		bar, err := plotter.NewBarChart(plotter.Values{value(s)}, vg.Points(18))
		if err != nil {
			return err
		}
		bar.Horizontal = true
		bar.XMin = float64(len(names))
		bar.Color = rowColor(rowStyle(r, sh, sh.Rows[i]))
		bar.LineStyle.Width = 0
		p.Add(bar)
		names = append(names, sh.Rows[i])
	}
	p.NominalY(names...)
	p.X.Label.Text = label
	p.X.Tick.Marker = linearTicks{}
	p.X.Min = 0
	p.X.Max *= 1.1
	return nil
}

func metricOf(sh ShapeInfo, name string) Metric {
	for _, m := range sh.Metrics {
		if m.Name == name {
			return m
		}
	}
	return Metric{Name: name, Label: name}
}

// linearTicks labels six to twelve steps of 1, 2 or 5 times a power of ten
// (plot.DefaultTicks aims at three).
type linearTicks struct{}

// Ticks implements plot.Ticker.
func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: tickLabel(lo)}}
	}
	mag := math.Pow(10, math.Floor(math.Log10((hi-lo)/6)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; (hi-lo)/step <= 12 {
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
// 50000 (not 5e+04).
func tickLabel(v float64) string {
	if v >= 1 && v < 1e7 && v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// logTicks labels 1, 2 and 5 times each power of ten within the range, and
// marks the other integer multiples as minor ticks: an axis that spans less
// than two decades still gets several labels (plot.LogTicks labels only the
// powers of ten).
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = tickLabel(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}
