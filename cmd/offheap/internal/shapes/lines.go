package shapes

import (
	"fmt"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/cmd/offheap/internal/linesbench"
)

func init() {
	bench.RegisterWayShape(bench.WayShape{
		Spec: bench.Spec{
			Name:      "lines",
			Doc:       "80 B lines from 1 and 4 goroutines into a pipe: lines.Writer against log.Logger",
			Work:      bench.FixedTotal,
			Quick:     true,
			Order:     90,
			Unit:      "line",
			Workers:   []int{1, 4},
			Metrics:   []bench.Metric{{Name: "writes/line", Doc: "write system calls per line that reach the pipe"}},
			FixedSize: true,
			Verdicts:  linesVerdicts,
		},
		Ways: []bench.Way{
			{Name: "log", Doc: "log.New(pipe, \"\", 0): a mutex and a write per line", Run: linesWay(linesbench.Log)},
			{Name: "lines", Doc: "lines.NewWriter(pipe): whole lines, batched writes", Run: linesWay(linesbench.Lines)},
		},
	})
}

// linesWay runs the lines shape through target.
func linesWay(target linesbench.Target) func(t *bench.Trial) (bench.Sample, error) {
	return func(t *bench.Trial) (bench.Sample, error) { return runLines(t, target) }
}

func runLines(t *bench.Trial, target linesbench.Target) (bench.Sample, error) {
	n := t.Size(100_000, 400_000)
	res, err := linesbench.Run(target, n, t.Workers, 80)
	if err != nil {
		return bench.Sample{}, err
	}
	if res.Lines != n {
		return bench.Sample{}, fmt.Errorf("read back %d lines of %d", res.Lines, n)
	}
	return bench.Sample{Ops: int64(n), Elapsed: res.Elapsed,
		Metrics: map[string]float64{"writes/line": res.WritesPerLine()}}, nil
}

// linesVerdicts judges lines.Writer against log.Logger: at most half its
// time per line, at every goroutine count.
func linesVerdicts(r *bench.Report) []bench.Verdict {
	const name, figure, target, limit = "lines-log", "80 B lines into a pipe: lines.Writer / log.Logger, worst goroutine count", "<= 0.50x", 0.5
	info := r.Shape("lines")
	if info == nil {
		return []bench.Verdict{bench.Skip(name, figure, target, "lines not measured")}
	}
	worst, at, ws := 0.0, 0, 0.0
	var cells []*bench.Summary
	for _, w := range info.Workers {
		l, why := find(r, "lines", "", "lines", w)
		g, why2 := find(r, "lines", "", "log", w)
		if l == nil || g == nil {
			return []bench.Verdict{bench.Skip(name, figure, target, missing(why, why2))}
		}
		if v := l.MinNs / g.MinNs; v > worst {
			worst, at, ws, cells = v, w, l.Metrics["writes/line"], []*bench.Summary{l, g}
		}
	}
	return []bench.Verdict{atMost(bench.Verdict{Name: name, Figure: figure, Target: target, Value: worst,
		Measured: fmt.Sprintf("%.2fx at %d goroutine(s), %.4f writes per line", worst, at, ws)}, limit, cells...)}
}
