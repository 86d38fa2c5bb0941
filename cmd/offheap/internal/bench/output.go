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
	fmt.Fprintf(ew, "goos: %s\ngoarch: %s\npkg: github.com/offheap/offheap/cmd/offheap/internal/bench\ncpu: %s\n", r.GOOS, r.GOARCH, r.CPU)
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

var page = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>offheap bench</title>
<style>body{font-family:sans-serif;max-width:70em;margin:auto;padding:1em}pre{background:#f6f6f6;padding:.5em;overflow-x:auto}
td,th{padding:.2em .6em;text-align:left;vertical-align:top}.notice{background:#fff4d6;padding:.5em}
.met{color:#070}.missed{color:#b00}.not-judged{color:#777}</style></head><body>
<h1>offheap bench</h1>
<p>{{.R.GOOS}}/{{.R.GOARCH}}, {{.R.CPU}}, GOMAXPROCS={{.R.GOMAXPROCS}}, {{.R.GoVersion}}, {{.R.Runs}} runs.
Raw data: <a href="results.txt">results.txt</a> (benchstat), <a href="results.json">results.json</a>.</p>
<nav><b>Contents</b>: {{if .Verdicts}}<a href="#verdicts">verdicts</a> ({{.Tally}}) · {{end}}<a href="#columns">columns</a>{{range .Shapes}} · <a href="#{{.Name}}">{{.Name}}</a>{{end}}</nav>
{{range $k, $v := .R.Unavailable}}<p>arm <b>{{$k}}</b> unavailable: {{$v}}</p>{{end}}
{{with .Notice}}<p class="notice">{{.}}</p>{{end}}
{{if .Verdicts}}<h2 id="verdicts">Verdicts</h2><p>{{.Tally}}</p><table>{{range .Verdicts}}<tr class="{{.Class}}"><td>{{.Status}}</td><td>{{.Figure}}</td><td>target {{.Target}}</td><td>{{.Detail}}</td></tr>{{end}}</table>{{end}}
<h2 id="columns">Columns</h2><pre>{{.Legend}}</pre>
{{range .Shapes}}<h2 id="{{.Name}}">{{.Name}}</h2><p>{{.Doc}} ({{.Work}})</p>
<pre>{{.Table}}</pre>
<img src="{{.Name}}.svg" alt="{{.Name}} plot">
{{end}}</body></html>
`))

// WriteHTML writes index.html: a table of contents, the verdicts (each row
// of class met, missed or not-judged), the column legend, and each shape's
// table (the text report's, escaped) above its plot, which it links as
// <name>.svg.
func WriteHTML(w io.Writer, r *Report) error {
	type shape struct {
		ShapeInfo
		Table string
	}
	type verdict struct {
		Verdict
		Status, Class, Detail string
	}
	data := struct {
		R             *Report
		Shapes        []shape
		Verdicts      []verdict
		Tally, Notice string
		Legend        string
	}{R: r, Tally: Tally(r.Verdicts), Notice: ScalingNotice(r)}
	var metrics []Metric
	for _, sh := range r.Shapes {
		var b strings.Builder
		writeShape(&b, r, sh)
		data.Shapes = append(data.Shapes, shape{sh, strings.TrimSpace(b.String())})
		metrics = append(metrics, sh.Metrics...)
	}
	var legend strings.Builder
	if err := WriteLegend(&legend, metrics); err != nil {
		return err
	}
	data.Legend = legend.String()
	for _, v := range r.Verdicts {
		data.Verdicts = append(data.Verdicts, verdict{v, v.Status(), verdictClass(v), verdictDetail(v)})
	}
	return page.Execute(w, data)
}

// verdictClass is a verdict's CSS class: met, missed or not-judged.
func verdictClass(v Verdict) string {
	return map[string]string{Met: "met", Missed: "missed", NotJudged: "not-judged"}[v.Outcome()]
}
