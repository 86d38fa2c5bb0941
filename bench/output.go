package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteDir writes the full report into dir, creating it: results.txt (Go
// benchmark format, one line per run, for benchstat), results.json, one SVG
// per shape and index.html with every table and plot.
func WriteDir(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "results.txt"), func(w io.Writer) error { return WriteBenchFormat(w, r) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "results.json"), func(w io.Writer) error { return WriteJSON(w, r) }); err != nil {
		return err
	}
	for _, sh := range r.Shapes {
		if err := writeFile(filepath.Join(dir, sh.Name+".svg"), func(w io.Writer) error { return WritePlot(w, r, sh) }); err != nil {
			return fmt.Errorf("plot of %s: %w", sh.Name, err)
		}
	}
	return writeFile(filepath.Join(dir, "index.html"), func(w io.Writer) error { return WriteHTML(w, r) })
}

func writeFile(path string, f func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(fh)
	if err := f(bw); err != nil {
		fh.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// WriteBenchFormat writes every sample as a line of Go benchmark output,
// under the goos/goarch/pkg/cpu header, so benchstat can compare two reports
// (each run is its own line, so benchstat sees the -runs samples). Extra
// metrics follow ns/op as further value-unit pairs.
func WriteBenchFormat(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "goos: %s\ngoarch: %s\npkg: github.com/offheap/offheap/bench\ncpu: %s\n", r.GOOS, r.GOARCH, r.CPU)
	keys := map[string]string{}
	for _, sh := range r.Shapes {
		keys[sh.Name] = sh.RowKey
	}
	for _, m := range r.Samples {
		fmt.Fprintf(ew, "Benchmark%s\t%d\t%s ns/op", BenchName(m.Shape, m.Sub, keys[m.Shape], m.Row, m.Workers), m.Ops, fmtFloat(m.NsPerOp))
		for _, k := range slices.Sorted(maps.Keys(m.Metrics)) {
			fmt.Fprintf(ew, "\t%s %s", fmtFloat(m.Metrics[k]), k)
		}
		fmt.Fprintln(ew)
	}
	return ew.err
}

func fmtFloat(v float64) string { return fmt.Sprintf("%.4g", v) }

// WriteJSON writes the whole report, samples included, as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WritePlot draws one shape as an SVG: one panel per sub, workers on x and
// ns per op (log scale, minimum of the runs) on y, a line per row. A shape
// measured at one worker count is drawn as bars instead.
func WritePlot(w io.Writer, r *Report, sh ShapeInfo) error {
	var panels []*plot.Plot
	for _, sub := range sh.Subs {
		p := plot.New()
		p.Title.Text = sh.Name
		if sub != "" {
			p.Title.Text += " " + sub
		}
		p.Y.Label.Text = "ns/" + sh.Unit + " (min)"
		if len(sh.Workers) > 1 {
			p.X.Label.Text = "workers (" + string(sh.Work) + ")"
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			p.Legend.Top = true
			var lines []any
			for _, row := range sh.Rows {
				var xys plotter.XYs
				for _, nw := range sh.Workers {
					if s := r.Find(sh.Name, sub, row, nw); s != nil && s.MinNs > 0 {
						xys = append(xys, plotter.XY{X: float64(nw), Y: s.MinNs})
					}
				}
				if len(xys) > 0 {
					lines = append(lines, row, xys)
				}
			}
			if err := plotutil.AddLinePoints(p, lines...); err != nil {
				return err
			}
			// Headroom above the data for the legend (top right): a
			// factor of 30 on the log axis keeps the lines in the lower
			// part of the panel.
			p.Y.Max *= 30
		} else {
			var vals plotter.Values
			var names []string
			for _, row := range sh.Rows {
				if s := r.Find(sh.Name, sub, row, sh.Workers[0]); s != nil {
					vals = append(vals, s.MinNs)
					names = append(names, row)
				}
			}
			bars, err := plotter.NewBarChart(vals, vg.Points(30))
			if err != nil {
				return err
			}
			bars.Color = plotutil.Color(0)
			p.Add(bars)
			p.NominalX(names...)
			p.X.Label.Text = fmt.Sprintf("%s (%d worker)", sh.RowKey, sh.Workers[0])
		}
		panels = append(panels, p)
	}
	const width, height = 16 * vg.Centimeter, 10 * vg.Centimeter
	img := vgsvg.New(width, height*vg.Length(len(panels)))
	dc := draw.New(img)
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Centimeter / 2}, dc)
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
	_, err := img.WriteTo(w)
	return err
}

var page = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>offheap bench</title>
<style>body{font-family:sans-serif;max-width:70em;margin:auto;padding:1em}pre{background:#f6f6f6;padding:.5em;overflow-x:auto}
.PASS{color:#070}.FAIL{color:#b00}.SKIP{color:#777}td,th{padding:.2em .6em;text-align:left}</style></head><body>
<h1>offheap bench</h1>
<p>{{.R.GOOS}}/{{.R.GOARCH}}, {{.R.CPU}}, GOMAXPROCS={{.R.GOMAXPROCS}}, {{.R.GoVersion}}, {{.R.Runs}} runs.
Times are ns per op: minimum (and median) of the runs; ratios compare minimums at the same worker count, below 1 is faster.
Raw data: <a href="results.txt">results.txt</a> (benchstat), <a href="results.json">results.json</a>.</p>
{{range $k, $v := .R.Unavailable}}<p>arm <b>{{$k}}</b> unavailable: {{$v}}</p>{{end}}
{{if .Verdicts}}<h2>Verdicts</h2><table>{{range .Verdicts}}<tr><td class="{{.Status}}">{{.Status}}</td><td>{{.Figure}}</td><td>target {{.Target}}</td><td>{{.Detail}}</td></tr>{{end}}</table>{{end}}
{{range .Shapes}}<h2 id="{{.Name}}">{{.Name}}</h2><p>{{.Doc}} ({{.Work}})</p>
<pre>{{.Table}}</pre>
<img src="{{.Name}}.svg" alt="{{.Name}} plot">
{{end}}</body></html>
`))

// WriteHTML writes index.html: the verdicts, and each shape's table (the
// text report's, escaped) above its plot, which it links as <name>.svg.
func WriteHTML(w io.Writer, r *Report) error {
	type shape struct {
		ShapeInfo
		Table string
	}
	type verdict struct {
		Verdict
		Status, Detail string // shadow Verdict.Status for the template
	}
	data := struct {
		R        *Report
		Shapes   []shape
		Verdicts []verdict
	}{R: r}
	for _, sh := range r.Shapes {
		var b strings.Builder
		writeShape(&b, r, sh)
		data.Shapes = append(data.Shapes, shape{sh, strings.TrimSpace(b.String())})
	}
	for _, v := range r.Verdicts {
		st, d := v.Status(), v.Measured
		if v.Skipped != "" {
			d = v.Skipped
		}
		if v.Note != "" {
			d += " (" + v.Note + ")"
		}
		data.Verdicts = append(data.Verdicts, verdict{v, st, d})
	}
	return page.Execute(w, data)
}
