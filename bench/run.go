package bench

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// Config selects what Run measures. The zero Config is the default run:
// every quick shape, every default arm, DefaultWorkers, 3 runs.
type Config struct {
	Shapes  []string // shape names; empty = every quick shape
	Arms    []string // arm names; empty = every default arm
	Workers []int    // worker counts; empty = DefaultWorkers()
	Runs    int      // runs per measurement; 0 = 3
	Long    bool     // seed-scale sizes instead of quick ones
	// Scale, between 0 and 1, shrinks every size; tests use it. 0 means 1.
	Scale float64
	// TrialTime is what one trial should take, at least roughly: before
	// the first run of each (shape, sub, arm) the runner times a trial at
	// 1/16 size and shrinks the quick sizes (never below 1/20, never up)
	// so that slow arms do not take minutes. ns/op stays comparable, and
	// the size is then fixed over workers and runs. 0 means 50ms; negative
	// turns calibration off. -long never calibrates.
	TrialTime time.Duration
	// Progress, when set, is called after every trial.
	Progress func(done, total int, what string)
}

// DefaultWorkers is 1, 2, 4 and twice GOMAXPROCS, deduplicated and sorted.
func DefaultWorkers() []int {
	w := []int{1, 2, 4, 2 * runtime.GOMAXPROCS(0)}
	slices.Sort(w)
	return slices.Compact(w)
}

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
// minimum ns/op (the least disturbed run) and the median, and the median of
// each extra metric.
type Summary struct {
	Shape    string             `json:"shape"`
	Sub      string             `json:"sub,omitempty"`
	Row      string             `json:"row"`
	Workers  int                `json:"workers"`
	Runs     int                `json:"runs"`
	MinNs    float64            `json:"min_ns_per_op"`
	MedianNs float64            `json:"median_ns_per_op"`
	Metrics  map[string]float64 `json:"metrics,omitempty"`
}

// ShapeInfo is what a report needs to know about a shape that ran.
type ShapeInfo struct {
	Name    string   `json:"name"`
	Doc     string   `json:"doc"`
	Work    Work     `json:"work"`
	Unit    string   `json:"unit"`
	RowKey  string   `json:"row_key"`
	Subs    []string `json:"subs"`
	Rows    []string `json:"rows"`
	Workers []int    `json:"workers"`
	Metrics []string `json:"metrics,omitempty"`
	Control bool     `json:"control,omitempty"`
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

// Run measures cfg's shapes against cfg's arms and returns the report. The
// loop order is shape, run, arm, sub, workers: every arm gets a fresh
// instance per (shape, run), and the arms are interleaved within each run so
// that drift (thermal, noisy neighbours) hits all of them alike. A shape with
// fixed total work brings the compute control in with it, so that its
// scaling can be judged against this machine's.
//
// An arm whose New fails is recorded in Report.Unavailable and skipped. A
// shape that fails, or an offheap census that does not add up, ends the run
// with an error: such numbers would be meaningless.
func Run(cfg Config) (*Report, error) {
	shapes, err := LookupShapes(cfg.Shapes)
	if err != nil {
		return nil, err
	}
	arms, err := LookupArms(cfg.Arms)
	if err != nil {
		return nil, err
	}
	workers := cfg.Workers
	if len(workers) == 0 {
		workers = DefaultWorkers()
	}
	for _, w := range workers {
		if w < 1 {
			return nil, fmt.Errorf("worker count %d: must be at least 1", w)
		}
	}
	runs := cfg.Runs
	if runs <= 0 {
		runs = 3
	}
	shapes = withControl(shapes, workers)

	r := &Report{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPU: cpuName(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), Runs: runs, Long: cfg.Long,
		Started: time.Now(), Unavailable: map[string]string{},
	}

	// Try each arm once up front so that an unavailable one is reported
	// once and left out of every table.
	var live []*Arm
	for _, a := range arms {
		inst, err := a.New()
		if err != nil {
			r.Unavailable[a.Name] = err.Error()
			continue
		}
		closeArm(inst)
		live = append(live, a)
	}

	total := 0
	for _, s := range shapes {
		total += runs * len(rowsOf(s, live)) * len(s.Subs) * len(workersOf(s, workers))
	}
	done := 0
	type calKey struct{ shape, sub, row string }
	scales := map[calKey]float64{}
	for _, s := range shapes {
		ws := workersOf(s, workers)
		info := ShapeInfo{Name: s.Name, Doc: s.Doc, Work: s.Work, Unit: s.Unit, RowKey: s.RowKey,
			Rows: rowsOf(s, live), Workers: ws, Metrics: s.Metrics, Control: s.Control}
		for _, sub := range s.Subs {
			info.Subs = append(info.Subs, sub.Name)
		}
		for run := range runs {
			for _, row := range info.Rows {
				var inst Allocator
				if len(s.Ways) == 0 {
					a := armNamed(live, row)
					if inst, err = a.New(); err != nil {
						return nil, fmt.Errorf("arm %s: %w", row, err)
					}
				}
				for _, sub := range s.Subs {
					scale := cfg.Scale
					if scale <= 0 || scale > 1 {
						scale = 1
					}
					if run == 0 && calibrate(cfg, s) {
						// A small trial first: it warms the arm and
						// times it, to size the real ones.
						t := &Trial{Shape: s, Sub: sub, Row: row, Alloc: inst, Workers: 1, scale: scale / calibDiv}
						m, err := runTrial(t)
						if err != nil {
							closeArm(inst)
							return nil, fmt.Errorf("calibrating: %w", err)
						}
						target := cfg.TrialTime
						if target == 0 {
							target = 50 * time.Millisecond
						}
						est := float64(m.Elapsed) * calibDiv
						scales[calKey{s.Name, sub.Name, row}] = scale * min(1, max(minCalib, float64(target)/est))
					}
					if f, ok := scales[calKey{s.Name, sub.Name, row}]; ok {
						scale = f
					}
					for _, w := range ws {
						t := &Trial{Shape: s, Sub: sub, Row: row, Alloc: inst, Workers: w, Long: cfg.Long, scale: scale}
						m, err := runTrial(t)
						if err != nil {
							closeArm(inst)
							return nil, err
						}
						m.Run = run
						r.Samples = append(r.Samples, m)
						done++
						if cfg.Progress != nil {
							cfg.Progress(done, total, trialName(s, sub, row, w))
						}
					}
				}
				if err := closeArm(inst); err != nil {
					return nil, fmt.Errorf("arm %s: closing after shape %s: %w", row, s.Name, err)
				}
			}
		}
		r.Shapes = append(r.Shapes, info)
	}
	r.Elapsed = time.Since(r.Started)
	r.Summaries = summarize(r.Samples)
	for _, s := range shapes {
		if s.Verdicts != nil {
			r.Verdicts = append(r.Verdicts, s.Verdicts(r)...)
		}
	}
	return r, nil
}

// Calibration: the probe trial's fraction of the size, and the smallest
// fraction of the quick size a trial is cut to.
const (
	calibDiv = 16
	minCalib = 0.05
)

func calibrate(cfg Config, s *Shape) bool {
	return !cfg.Long && !s.FixedSize && cfg.TrialTime >= 0
}

// runTrial runs one trial and checks the census of an offheap arm: the heap
// must have counted exactly the allocations the shape made, and hold nothing
// once the shape is done.
func runTrial(t *Trial) (Measurement, error) {
	name := trialName(t.Shape, t.Sub, t.Row, t.Workers)
	// Collect the previous trial's garbage now, so that it is not charged
	// to whichever arm runs next.
	runtime.GC()
	ss, hasStats := t.Alloc.(StatsSource)
	before := statsOf(ss, hasStats)
	s, err := t.Shape.Run(t)
	if err != nil {
		return Measurement{}, fmt.Errorf("%s: %w", name, err)
	}
	if s.Ops <= 0 || s.Elapsed <= 0 {
		return Measurement{}, fmt.Errorf("%s: shape reported %d ops in %v", name, s.Ops, s.Elapsed)
	}
	m := Measurement{Shape: t.Shape.Name, Sub: t.Sub.Name, Row: t.Row, Workers: t.Workers,
		Ops: s.Ops, Allocs: s.Allocs, Elapsed: s.Elapsed,
		NsPerOp: float64(s.Elapsed.Nanoseconds()) / float64(s.Ops), Metrics: s.Metrics}
	if hasStats {
		after := ss.Stats()
		allocs := after.Allocs - before.Allocs
		switch {
		case allocs != uint64(s.Allocs):
			return m, fmt.Errorf("%s: census: the heap counted %d allocations, the shape made %d", name, allocs, s.Allocs)
		case after.InUseBytes != 0:
			return m, fmt.Errorf("%s: census: %d bytes still in use after the shape freed everything", name, after.InUseBytes)
		}
		if m.Metrics == nil {
			m.Metrics = map[string]float64{}
		}
		if allocs > 0 {
			m.Metrics[MetricHitRate] = 100 * float64(after.MagazineHits-before.MagazineHits) / float64(allocs)
		}
	}
	return m, nil
}

// MetricHitRate is the metric (and benchmark unit) of the magazine hit rate,
// in percent of allocations, that the runner adds for offheap arms.
const MetricHitRate = "maghit-pct"

func statsOf(ss StatsSource, ok bool) (s struct{ Allocs, MagazineHits, InUseBytes uint64 }) {
	if ok {
		st := ss.Stats()
		s.Allocs, s.MagazineHits, s.InUseBytes = st.Allocs, st.MagazineHits, st.InUseBytes
	}
	return s
}

func closeArm(a Allocator) error {
	if c, ok := a.(Closer); ok {
		return c.Close()
	}
	return nil
}

func armNamed(arms []*Arm, name string) *Arm {
	for _, a := range arms {
		if a.Name == name {
			return a
		}
	}
	return nil
}

func rowsOf(s *Shape, arms []*Arm) []string {
	if len(s.Ways) > 0 {
		return s.Ways
	}
	var rows []string
	for _, a := range arms {
		rows = append(rows, a.Name)
	}
	return rows
}

func workersOf(s *Shape, workers []int) []int {
	if len(s.Workers) > 0 {
		return s.Workers
	}
	return workers
}

// withControl adds the control shape in front when a selected shape has
// fixed total work over more than one worker count and it is not there.
func withControl(shapes []*Shape, workers []int) []*Shape {
	need := false
	for _, s := range shapes {
		if s.Control {
			return shapes
		}
		if s.Work == FixedTotal && len(workersOf(s, workers)) > 1 {
			need = true
		}
	}
	if !need {
		return shapes
	}
	for _, s := range Shapes() {
		if s.Control {
			return append([]*Shape{s}, shapes...)
		}
	}
	return shapes
}

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

func trialName(s *Shape, sub Sub, row string, w int) string {
	return BenchName(s.Name, sub.Name, s.RowKey, row, w)
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
// 1.6x faster on 2 workers than on 1. It is false when the control did not
// run at 1 and 2 workers.
func (r *Report) Scaled() bool {
	s, ok := r.ControlSpeedup(2)
	return ok && s >= MinControlSpeedup
}

// MinControlSpeedup is the compute control's speedup at 2 workers below
// which a machine is said not to scale (a loaded or throttled box, or one
// core): scaling tables from it mean nothing.
const MinControlSpeedup = 1.6

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
