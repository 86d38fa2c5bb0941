package bench

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// Measurement is one trial's result.
type Measurement struct {
	Shape   string             `json:"shape"`
	Sub     string             `json:"sub,omitempty"`
	Row     string             `json:"row"`
	Workers int                `json:"workers"`
	Run     int                `json:"run"`
	Ops     int64              `json:"ops"`
	Allocs  int64              `json:"allocs"`
	Elapsed time.Duration      `json:"elapsed_ns"`
	NsPerOp float64            `json:"ns_per_op"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Summary aggregates the runs of one (shape, sub, row, workers) cell: the
// minimum ns/op (the least disturbed run), the next one and the median, and
// the median of each extra metric.
type Summary struct {
	Shape    string  `json:"shape"`
	Sub      string  `json:"sub,omitempty"`
	Row      string  `json:"row"`
	Workers  int     `json:"workers"`
	Runs     int     `json:"runs"`
	MinNs    float64 `json:"min_ns_per_op"`
	MedianNs float64 `json:"median_ns_per_op"`
	// NextNs is the second smallest ns/op, 0 for one run: when it is close
	// to MinNs, the minimum is the undisturbed time.
	NextNs  float64            `json:"next_ns_per_op,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// ShapeInfo is what a report needs to know about a shape that ran.
type ShapeInfo struct {
	Name       string   `json:"name"`
	Doc        string   `json:"doc"`
	Work       Work     `json:"work"`
	Unit       string   `json:"unit"`
	RowKey     string   `json:"row_key"` // "arm" or "way"
	Subs       []string `json:"subs"`
	Rows       []string `json:"rows"`
	Workers    []int    `json:"workers"`
	Runs       int      `json:"runs"` // the runs made: Report.Runs, or fewer (Spec.Runs)
	Metrics    []Metric `json:"metrics,omitempty"`
	Plot       []string `json:"plot,omitempty"`        // the metrics plotted instead of ns per op
	Scaling    float64  `json:"scaling,omitempty"`     // Spec.Scaling
	ScalingSub string   `json:"scaling_sub,omitempty"` // Spec.ScalingSub
	Control    bool     `json:"control,omitempty"`
}

// Report is everything one Run measured.
type Report struct {
	GOOS        string            `json:"goos"`
	GOARCH      string            `json:"goarch"`
	CPU         string            `json:"cpu"`
	NumCPU      int               `json:"num_cpu"`
	GOMAXPROCS  int               `json:"gomaxprocs"`
	GoVersion   string            `json:"go_version"`
	Runs        int               `json:"runs"`
	Long        bool              `json:"long"`
	Started     time.Time         `json:"started"`
	Elapsed     time.Duration     `json:"elapsed_ns"`
	Unavailable map[string]string `json:"unavailable,omitempty"` // arm name -> why
	Shapes      []ShapeInfo       `json:"shapes"`
	Samples     []Measurement     `json:"samples"`
	Summaries   []Summary         `json:"summaries"`
	Verdicts    []Verdict         `json:"verdicts,omitempty"`
}

// Find returns the summary of one cell, or nil.
func (r *Report) Find(shape, sub, row string, workers int) *Summary {
	for i := range r.Summaries {
		s := &r.Summaries[i]
		if s.Shape == shape && s.Sub == sub && s.Row == row && s.Workers == workers {
			return s
		}
	}
	return nil
}

// Shape returns the information of the shape that ran under name, or nil.
func (r *Report) Shape(name string) *ShapeInfo {
	for i := range r.Shapes {
		if r.Shapes[i].Name == name {
			return &r.Shapes[i]
		}
	}
	return nil
}

// ControlSpeedup returns the compute control's speedup at w workers (time at
// 1 worker over time at w, minimum of the runs), or false if the control did
// not run at both counts.
func (r *Report) ControlSpeedup(w int) (float64, bool) {
	for _, sh := range r.Shapes {
		if !sh.Control {
			continue
		}
		one := r.Find(sh.Name, "", sh.Rows[0], 1)
		at := r.Find(sh.Name, "", sh.Rows[0], w)
		if one == nil || at == nil {
			return 0, false
		}
		return one.MinNs / at.MinNs, true
	}
	return 0, false
}

// Scaled reports whether this machine scaled: the compute control at least
// MinControlSpeedup faster on 2 workers than on 1. It is false when the
// control did not run at 1 and 2 workers.
func (r *Report) Scaled() bool {
	s, ok := r.ControlSpeedup(2)
	return ok && s >= MinControlSpeedup
}

// MinControlSpeedup is the compute control's speedup at 2 workers below
// which a machine is said not to scale (a loaded or throttled box, or one
// core): scaling tables from it mean nothing.
const MinControlSpeedup = 1.6

// BenchName is a trial's name in Go benchmark format, without the
// "Benchmark" prefix: Pairs/size=64/arm=offheap/workers=2.
func BenchName(shape, sub, rowKey, row string, workers int) string {
	var b strings.Builder
	up := true
	for _, c := range shape {
		if c == '-' || c == '_' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		b.WriteRune(c)
	}
	if sub != "" {
		b.WriteString("/" + sub)
	}
	fmt.Fprintf(&b, "/%s=%s/workers=%d", rowKey, row, workers)
	return b.String()
}

func summarize(ms []Measurement) []Summary {
	type key struct {
		shape, sub, row string
		w               int
	}
	groups := map[key][]Measurement{}
	var order []key
	for _, m := range ms {
		k := key{m.Shape, m.Sub, m.Row, m.Workers}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], m)
	}
	var out []Summary
	for _, k := range order {
		g := groups[k]
		ns := make([]float64, len(g))
		metrics := map[string][]float64{}
		for i, m := range g {
			ns[i] = m.NsPerOp
			for name, v := range m.Metrics {
				metrics[name] = append(metrics[name], v)
			}
		}
		s := Summary{Shape: k.shape, Sub: k.sub, Row: k.row, Workers: k.w, Runs: len(g),
			MinNs: slices.Min(ns), MedianNs: median(ns)}
		if len(ns) > 1 {
			sorted := slices.Sorted(slices.Values(ns))
			s.NextNs = sorted[1]
		}
		if len(metrics) > 0 {
			s.Metrics = map[string]float64{}
			for name, vs := range metrics {
				s.Metrics[name] = median(vs)
			}
		}
		out = append(out, s)
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// cpuName reads the CPU model the way `go test` prints it in benchmark
// output, so benchstat groups results by machine.
func cpuName() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
