package bench

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"time"
)

// Config selects what Run measures. The zero Config is the default run:
// every quick shape, every default arm, DefaultWorkers, DefaultRuns runs.
type Config struct {
	Shapes  []string // shape names; empty = every quick shape
	Arms    []string // arm names; empty = every default arm
	Workers []int    // worker counts; empty = DefaultWorkers()
	Runs    int      // runs per measurement; 0 = DefaultRuns
	Long    bool     // seed-scale sizes instead of quick ones
	// HeapSize, when above 0, is the size in bytes of the one big heap of
	// the shapes that hold one (bigheap), in place of their own sizes for
	// quick and -long runs.
	HeapSize int64
	// Scale, between 0 and 1, shrinks every size; tests use it. 0 means 1.
	Scale float64
	// TrialTime is what one trial should take, at least roughly: before
	// the first run of each (shape, sub, row) the runner times a trial at
	// 1/16 size, on one worker and on the most workers it runs, and
	// shrinks the quick sizes (never below 1/500, never up) so that the
	// slower takes about TrialTime: slow arms do not take minutes. ns/op
	// stays comparable, and the size is then fixed over workers and runs.
	// 0 means 50ms; negative turns calibration off. -long never
	// calibrates.
	TrialTime time.Duration
	// Progress, when set, is called after every trial.
	Progress func(Progress)
}

// DefaultRuns is how many times a default run measures every cell: six,
// the fewest from which benchstat gives a confidence interval.
const DefaultRuns = 6

// Progress says how far a Run has got, after one trial.
type Progress struct {
	Shape        string        // the shape running
	ShapeIndex   int           // its position, from 1
	Shapes       int           // how many shapes the run has
	Trial        string        // the trial just done, in benchmark form
	Done, Total  int           // trials done and to do in the whole run
	ShapeDone    bool          // this was the shape's last trial
	ShapeElapsed time.Duration // time in this shape so far
	// Note, when set, is a stage a trial still running has reached
	// (Trial.Note), and Trial names that trial: a long trial is not
	// silent. Done is then the trials done before it.
	Note string
}

// DefaultWorkers is 1, 2, 4 and twice GOMAXPROCS, deduplicated and sorted.
func DefaultWorkers() []int {
	w := []int{1, 2, 4, 2 * runtime.GOMAXPROCS(0)}
	slices.Sort(w)
	return slices.Compact(w)
}

// Run measures cfg's shapes against cfg's arms and returns the report. The
// loop order is shape, run, row, sub, workers: an arm shape gets a fresh
// instance of every arm per (shape, run), and the rows are interleaved
// within each run so that drift (thermal, noisy neighbours) hits all of
// them alike. A shape with fixed total work brings the compute control in
// with it, so that its scaling can be judged against this machine's. Each
// shape starts from the same state (see settle), whatever ran before it.
//
// An arm whose New fails is recorded in Report.Unavailable and skipped. A
// shape that fails, or an offheap census that does not add up, ends the run
// with an error: such numbers would be meaningless.
func Run(cfg Config) (*Report, error) {
	p, err := newPlan(cfg)
	if err != nil {
		return nil, err
	}
	r := &Report{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPU: cpuName(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), Runs: p.runs, Long: cfg.Long,
		Started: time.Now(), Unavailable: map[string]string{},
	}
	p.probeArms(r)
	for i, s := range p.shapes {
		info, err := p.runShape(r, i, s)
		if err != nil {
			return nil, err
		}
		r.Shapes = append(r.Shapes, info)
	}
	r.Elapsed = time.Since(r.Started)
	r.Summaries = summarize(r.Samples)
	for _, s := range p.shapes {
		if s.Verdicts != nil {
			r.Verdicts = append(r.Verdicts, s.Verdicts(r)...)
		}
	}
	return r, nil
}

// plan is a Run's resolved configuration and its progress.
type plan struct {
	cfg        Config
	shapes     []*shape
	arms       []*Arm               // after probeArms, only those that could be made
	probed     map[string]Allocator // an instance of each arm, made and closed by probeArms
	workers    []int
	runs       int
	scale      float64
	goroutines int // when Run began: what settle waits to get back to
	done       int
	total      int
}

func newPlan(cfg Config) (*plan, error) {
	shapes, err := lookupShapes(cfg.Shapes)
	if err != nil {
		return nil, err
	}
	arms, err := LookupArms(cfg.Arms)
	if err != nil {
		return nil, err
	}
	p := &plan{cfg: cfg, arms: arms, workers: cfg.Workers, runs: cfg.Runs, scale: cfg.Scale,
		goroutines: runtime.NumGoroutine()}
	if len(p.workers) == 0 {
		p.workers = DefaultWorkers()
	}
	for _, w := range p.workers {
		if w < 1 {
			return nil, fmt.Errorf("worker count %d: must be at least 1", w)
		}
	}
	if p.runs <= 0 {
		p.runs = DefaultRuns
	}
	if p.scale <= 0 || p.scale > 1 {
		p.scale = 1
	}
	p.shapes = withControl(shapes, p.workers)
	return p, nil
}

// probeArms makes and closes each arm once up front, so that an
// unavailable one is reported once and left out of every table, leaves out
// the shapes with no rows to run, and counts the trials to come.
func (p *plan) probeArms(r *Report) {
	var live []*Arm
	p.probed = map[string]Allocator{}
	for _, a := range p.arms {
		inst, err := a.New()
		if err != nil {
			r.Unavailable[a.Name] = err.Error()
			continue
		}
		closeArm(inst)
		live = append(live, a)
		p.probed[a.Name] = inst
	}
	p.arms = live
	// A shape none of whose rows runs (a cache shape, whose rows are the
	// key-value arms, in a run that names only allocators) is left out.
	var shapes []*shape
	for _, s := range p.shapes {
		if len(p.rows(s)) > 0 {
			shapes = append(shapes, s)
		}
	}
	p.shapes = shapes
	for _, s := range p.shapes {
		p.total += p.runsOf(s) * len(p.rows(s)) * trialsPerRow(s.Subs, p.workersOf(s))
	}
}

// rows returns the rows of s in this run.
func (p *plan) rows(s *shape) []string {
	return s.rows(p.arms, len(p.cfg.Arms) > 0, p.probed)
}

// trialsPerRow is how many trials one run of one row makes: a trial per
// sub and worker count the sub runs at.
func trialsPerRow(subs []Sub, ws []int) int {
	n := 0
	for _, sub := range subs {
		n += len(sub.workers(ws))
	}
	return n
}

// runsOf is how many runs s makes: -runs, or fewer where its spec caps a
// quick run's (Spec.Runs).
func (p *plan) runsOf(s *shape) int {
	if s.Runs > 0 && !p.cfg.Long {
		return min(p.runs, s.Runs)
	}
	return p.runs
}

func (p *plan) workersOf(s *shape) []int {
	if len(s.Workers) > 0 {
		return s.Workers
	}
	return p.workers
}

// calKey names a calibrated size: one per (sub, row) of a shape.
type calKey struct{ sub, row string }

// runShape runs every trial of shape s, the i-th of the run.
func (p *plan) runShape(r *Report, i int, s *shape) (ShapeInfo, error) {
	settle(p.goroutines)
	start := time.Now()
	info := ShapeInfo{Name: s.Name, Doc: s.Doc, Work: s.Work, Unit: s.Unit, RowKey: s.rowKey,
		Rows: p.rows(s), Workers: p.workersOf(s), Runs: p.runsOf(s), Metrics: s.Metrics, Plot: s.Plot, Scaling: s.Scaling, ScalingSub: s.ScalingSub, Control: s.control}
	for _, sub := range s.Subs {
		info.Subs = append(info.Subs, sub.Name)
	}
	if p.cfg.Progress != nil { // the shape's start, so that a slow first trial is not a silence
		p.cfg.Progress(Progress{Shape: s.Name, ShapeIndex: i + 1, Shapes: len(p.shapes), Done: p.done, Total: p.total, Note: "started"})
	}
	scales := map[calKey]float64{}
	left := info.Runs * len(info.Rows) * trialsPerRow(s.Subs, info.Workers)
	for run := range info.Runs {
		for _, row := range info.Rows {
			note := func(trial, what string) {
				if p.cfg.Progress != nil {
					p.cfg.Progress(Progress{Shape: s.Name, ShapeIndex: i + 1, Shapes: len(p.shapes), Trial: trial,
						Done: p.done, Total: p.total, ShapeElapsed: time.Since(start), Note: what})
				}
			}
			err := p.runRow(s, row, info.Workers, run, scales, note, func(m Measurement) {
				r.Samples = append(r.Samples, m)
				p.done++
				left--
				if p.cfg.Progress != nil {
					p.cfg.Progress(Progress{Shape: s.Name, ShapeIndex: i + 1, Shapes: len(p.shapes),
						Trial: BenchName(s.Name, m.Sub, s.rowKey, m.Row, m.Workers), Done: p.done, Total: p.total,
						ShapeDone: left == 0, ShapeElapsed: time.Since(start)})
				}
			})
			if err != nil {
				return info, err
			}
		}
	}
	return info, nil
}

// runRow runs one run of one row of s: every sub at every worker count,
// with one instance of the row's arm, if it is an arm, for all of them.
func (p *plan) runRow(s *shape, row string, workers []int, run int, scales map[calKey]float64,
	note func(trial, what string), record func(Measurement)) (err error) {
	var a Allocator
	if s.way(row) == nil {
		if a, err = armNamed(p.arms, row).New(); err != nil {
			return fmt.Errorf("arm %s: %w", row, err)
		}
		defer func() {
			if cerr := closeArm(a); cerr != nil && err == nil {
				err = fmt.Errorf("arm %s: closing after shape %s: %w", row, s.Name, cerr)
			}
		}()
	}
	for _, sub := range s.Subs {
		t := Trial{Sub: sub, Row: row, Long: p.cfg.Long, HeapSize: p.cfg.HeapSize, scale: p.scale, note: note}
		key := calKey{sub.Name, row}
		if run == 0 && p.calibrates(s) {
			if scales[key], err = p.calibrate(s, t, a, sub.workers(workers)); err != nil {
				return err
			}
		}
		if f, ok := scales[key]; ok {
			t.scale = f
		}
		for _, w := range sub.workers(workers) {
			t.Workers = w
			m, err := runTrial(s, &t, a)
			if err != nil {
				return err
			}
			m.Run = run
			record(m)
		}
	}
	return nil
}

// Calibration: the probe trial's fraction of the size, and the smallest
// fraction of the quick size a trial is cut to. Arms can be thousands of
// times apart on one sub (a 256 KiB pair: 14 ns from a cache, 50 us from
// make), so the floor is low.
const (
	calibDiv = 16
	minCalib = 0.002
)

func (p *plan) calibrates(s *shape) bool {
	return !p.cfg.Long && !s.FixedSize && p.cfg.TrialTime >= 0
}

// calibrate times t at 1/calibDiv of its size on one worker, which also
// warms the arm, and on the most workers of ws, and returns the scale at
// which the slower of the two trials takes about Config.TrialTime. The size
// is one for every worker count (a shape with fixed total work must hold
// it), so the slowest count sets it: an arm whose lock contends, slower at
// four workers than at one, would otherwise take several TrialTimes there.
func (p *plan) calibrate(s *shape, t Trial, a Allocator, ws []int) (float64, error) {
	probes := []int{1}
	if len(ws) > 0 && slices.Max(ws) > 1 {
		probes = append(probes, slices.Max(ws))
	}
	var est time.Duration
	for _, w := range probes {
		probe := t
		probe.Workers, probe.scale = w, t.scale/calibDiv
		m, err := runTrial(s, &probe, a)
		if err != nil {
			return 0, fmt.Errorf("calibrating: %w", err)
		}
		est = max(est, m.Elapsed*calibDiv)
	}
	target := p.cfg.TrialTime
	if target == 0 {
		target = 50 * time.Millisecond
	}
	return t.scale * min(1, max(minCalib, float64(target)/float64(est))), nil
}

// settle brings the process back to the state every shape starts from, so
// that no shape's figures depend on what ran before it: the goroutines the
// last shape started have exited (up to a second's wait), its garbage is
// collected, and the Go heap's free memory is back with the OS, so that
// neither a collection nor the background scavenger runs into the next
// shape's trials. The arms and the heaps the shapes make are fresh per
// (shape, run) already.
func settle(goroutines int) {
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	debug.FreeOSMemory() // a collection, then every free page back
}

// runTrial runs one trial and checks the census of an offheap arm: the heap
// must have counted exactly the allocations the shape made, and hold nothing
// once the shape is done.
func runTrial(s *shape, t *Trial, a Allocator) (Measurement, error) {
	name := BenchName(s.Name, t.Sub.Name, s.rowKey, t.Row, t.Workers)
	t.name = name
	// Collect the previous trial's garbage now, so that it is not charged
	// to whichever row runs next.
	runtime.GC()
	ss, hasStats := a.(StatsSource)
	before := statsOf(ss, hasStats)
	var res Sample
	var err error
	if w := s.way(t.Row); w != nil {
		res, err = w.Run(t)
	} else {
		res, err = s.runArm(t, a)
	}
	if err != nil {
		return Measurement{}, fmt.Errorf("%s: %w", name, err)
	}
	if res.Ops <= 0 || res.Elapsed <= 0 {
		return Measurement{}, fmt.Errorf("%s: shape reported %d ops in %v", name, res.Ops, res.Elapsed)
	}
	m := Measurement{Shape: s.Name, Sub: t.Sub.Name, Row: t.Row, Workers: t.Workers,
		Ops: res.Ops, Allocs: res.Allocs, Elapsed: res.Elapsed,
		NsPerOp: float64(res.Elapsed.Nanoseconds()) / float64(res.Ops), Metrics: res.Metrics}
	if hasStats {
		after := ss.Stats()
		allocs := after.Allocs - before.Allocs
		switch {
		case allocs != uint64(res.Allocs):
			return m, fmt.Errorf("%s: census: the heap counted %d allocations, the shape made %d", name, allocs, res.Allocs)
		case after.InUseBytes != 0:
			return m, fmt.Errorf("%s: census: %d bytes still in use after the shape freed everything", name, after.InUseBytes)
		}
		if m.Metrics == nil {
			m.Metrics = map[string]float64{}
		}
		if allocs > 0 {
			hits := after.MagazineHits + after.LocalHits - before.MagazineHits - before.LocalHits
			m.Metrics[MetricHitRate] = 100 * float64(hits) / float64(allocs)
		}
	}
	return m, nil
}

// MetricHitRate is the metric (and benchmark unit) of the magazine hit rate,
// in percent of allocations, that the runner adds for offheap arms: the
// allocations a magazine or a Local served without the central lock.
const MetricHitRate = "maghit-pct"

func statsOf(ss StatsSource, ok bool) (s struct{ Allocs, MagazineHits, LocalHits, InUseBytes uint64 }) {
	if ok {
		st := ss.Stats()
		s.Allocs, s.MagazineHits, s.LocalHits, s.InUseBytes = st.Allocs, st.MagazineHits, st.LocalHits, st.InUseBytes
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

// withControl adds the control shape in front when a selected shape has
// fixed total work over more than one worker count and it is not there.
func withControl(ss []*shape, workers []int) []*shape {
	need := false
	for _, s := range ss {
		if s.control {
			return ss
		}
		ws := s.Workers
		if len(ws) == 0 {
			ws = workers
		}
		if s.Work == FixedTotal && len(ws) > 1 {
			need = true
		}
	}
	if !need {
		return ss
	}
	for _, s := range shapes() {
		if s.control {
			return append([]*shape{s}, ss...)
		}
	}
	return ss
}
