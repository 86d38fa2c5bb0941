package shapes

import (
	"fmt"

	"github.com/offheap/offheap/bench"
	"github.com/offheap/offheap/lines/linesbench"
)

func init() {
	bench.RegisterShape(bench.Shape{
		Name:      "lines",
		Doc:       "80 B lines from 1 and 4 goroutines into a pipe: lines.Writer against log.Logger (linesbench)",
		Work:      bench.FixedTotal,
		Quick:     true,
		Order:     90,
		Unit:      "line",
		Ways:      []string{"log", "lines"},
		Workers:   []int{1, 4},
		Metrics:   []string{"writes/line"},
		FixedSize: true,
		Run:       runLines,
	})
}

func runLines(t *bench.Trial) (bench.Sample, error) {
	n := t.Size(100_000, 400_000)
	res, err := linesbench.Run(linesbench.Target(t.Row), n, t.Workers, 80)
	if err != nil {
		return bench.Sample{}, err
	}
	if res.Lines != n {
		return bench.Sample{}, fmt.Errorf("read back %d lines of %d", res.Lines, n)
	}
	return bench.Sample{Ops: int64(n), Elapsed: res.Elapsed,
		Metrics: map[string]float64{"writes/line": res.WritesPerLine()}}, nil
}
