package bench_test

import (
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
