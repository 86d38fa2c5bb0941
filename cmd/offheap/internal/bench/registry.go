package bench

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/offheap/offheap"
)

// Allocator is what every arm provides. Alloc returns n zeroed bytes, as
// make does, so that arms are compared doing the same work; Free returns a
// slice that Alloc gave. Arms may add the optional interfaces Unzeroed,
// PerWorker, StatsSource and Closer.
type Allocator interface {
	Alloc(n int) []byte
	Free(b []byte)
}

// Unzeroed is implemented by arms that can skip zeroing (offheap's
// AllocUnzeroed, a sync.Pool's Get). Shapes that measure unzeroed pairs use it
// when present and fall back to Alloc.
type Unzeroed interface {
	AllocUnzeroed(n int) []byte
}

// PerWorker is implemented by arms whose state must not be shared between
// goroutines (the null arm's per-worker buffer). Shapes call ForWorker once
// per worker goroutine.
type PerWorker interface {
	Worker(i int) Allocator
}

// StatsSource is implemented by the offheap arms. The runner uses it to
// check the census after every trial (every allocation counted, nothing left
// in use) and to report the magazine hit rate.
type StatsSource interface {
	Stats() offheap.Stats
}

// Closer is implemented by arms that hold resources (an offheap heap's
// mapping). The runner closes every arm it created.
type Closer interface {
	Close() error
}

// ForWorker returns the handle worker i must use: a.Worker(i) for arms that
// implement PerWorker, a itself otherwise.
func ForWorker(a Allocator, i int) Allocator {
	if pw, ok := a.(PerWorker); ok {
		return pw.Worker(i)
	}
	return a
}

// AllocUnzeroed allocates n bytes without zeroing where a supports it.
func AllocUnzeroed(a Allocator, n int) []byte {
	if u, ok := a.(Unzeroed); ok {
		return u.AllocUnzeroed(n)
	}
	return a.Alloc(n)
}

// Arm describes one allocator under test.
type Arm struct {
	Name string // as given to -arms; also the arm= key in results.txt
	Doc  string // one line for -h
	// Default puts the arm in the default -arms list. Slow or diagnostic
	// arms leave it false and stay selectable by name.
	Default bool
	// OwnerFrees marks an arm whose blocks must be freed through the
	// handle that allocated them (a per-worker cache): it runs only on the
	// shapes whose blocks are (Spec.CrossFrees false).
	OwnerFrees bool
	// Only names the shapes the arm runs on, when it is not every shape:
	// for an arm that is a reference in some shapes and means nothing in
	// the others.
	Only []string
	// New makes a fresh instance. The runner makes one per (shape, run), so
	// each census covers one shape. An error marks the arm unavailable: it
	// is reported and skipped, not fatal.
	New func() (Allocator, error)
}

// Work says what a shape holds constant as the worker count changes.
type Work string

const (
	// FixedTotal shapes split one amount of work over the workers: perfect
	// scaling halves the time from 1 to 2 workers.
	FixedTotal Work = "fixed total work"
	// FixedPerWorker shapes give every worker the same amount of work.
	FixedPerWorker Work = "fixed work per worker"
)

// Sub is one row group of a shape: a size, a k, a mode.
type Sub struct {
	Name  string // a key=value fragment for benchmark names, e.g. "size=64"
	Param any    // whatever the shape's Run needs to know about it
	// FirstWorkers runs the sub at the shape's first worker count only (1
	// by default): for a group whose scaling is not in question and whose
	// slow rows would otherwise take much of the run.
	FirstWorkers bool
}

// workers returns the worker counts sub runs at, of the shape's ws.
func (sub Sub) workers(ws []int) []int {
	if sub.FirstWorkers && len(ws) > 1 {
		return ws[:1]
	}
	return ws
}

// Metric is an extra column of a shape's table (and a unit in results.txt):
// a key of Sample.Metrics and what it means, for the legend.
type Metric struct {
	Name  string // e.g. "gc-cpu-pct"
	Doc   string // one line for the legend
	Label string // a few words for a plot's axis, when the shape plots it
	// HigherIsBetter is true for a throughput or a hit rate, false for a
	// cost; the plot of a shape that plots this metric says which.
	HigherIsBetter bool
	// Target, when not 0, is the figure's target, which the plot draws as a
	// dashed line across the bars.
	Target float64
}

// Spec is what every shape declares, whatever its rows are.
type Spec struct {
	Name string // as given to -shapes
	Doc  string // one line for -h
	Work Work
	// Quick puts the shape in the default -shapes list.
	Quick bool
	// Order sorts shapes in reports; lower first.
	Order int
	// Subs lists the shape's row groups; nil means one unnamed group.
	Subs []Sub
	// Workers, when set, replaces the -workers list for this shape.
	Workers []int
	// Runs, when set, caps the runs of a quick run for this shape: a
	// shape whose trials take a second each and vary little (gc) runs
	// fewer, so that the default run keeps its length. -long runs every
	// shape -runs times.
	Runs int
	// Unit is what one op is, for table headers ("pair", "block").
	Unit string
	// CrossFrees marks an arm shape that frees blocks through another
	// worker's handle than the one that allocated them (a producer and a
	// consumer): arms marked OwnerFrees leave it out.
	CrossFrees bool
	// Metrics lists the extra metrics the table shows, in order.
	Metrics []Metric
	// Plot, when set, names the metrics the shape's plot shows instead of
	// ns per op, a panel each: the figure the shape exists for (the gc
	// shape's collector CPU share, frag's resident / live by phase).
	Plot []string
	// Scaling, when set, is the target of the shape's scaling figure,
	// time at 2 workers over time at 1 (fixed total work): the plot adds a
	// panel of that ratio per row for ScalingSub (every sub, when "")
	// where it was measured at both, the target dashed.
	Scaling    float64
	ScalingSub string
	// FixedSize keeps the shape's sizes as they are: the runner does not
	// shrink them for slow arms (the gc shape's live set is the point of
	// it; the lines shape's line counts are fixed by its spec).
	FixedSize bool
	// Verdicts, when set, judges the shape's headline figures once the run
	// is over.
	Verdicts VerdictFunc
}

// ArmShape is a workload every selected arm runs the same way: a row per
// arm. Run performs one trial with the arm a, a fresh instance per (shape,
// run) that every sub and worker count of that run shares.
type ArmShape struct {
	Spec
	Run func(t *Trial, a Allocator) (Sample, error)
}

// WayShape is a workload with rows of its own instead of arms: the gc
// shape's three ways of holding a live set, the arena shape's arena against
// heap pairs and make. The -arms flag does not change it, unless Arms is
// set.
type WayShape struct {
	Spec
	Ways []Way
	// Arms, when set, lets arms join the ways: in a run that names arms
	// (-arms), the rows are the named arms that Joins accepts, in the
	// order named, each run by Arms with a fresh instance per run, and a
	// way whose name is an arm's stands in for that arm (the memory
	// shapes' offheap way is the offheap arm's heap with the default
	// ReleaseDelay). A run that names no arms runs the ways alone: the
	// default run spends its time only on the rows the verdicts need.
	Arms func(t *Trial, a Allocator) (Sample, error)
	// Joins says whether an arm may join, from an instance made and
	// closed before the run (look at its type, not at its memory); nil
	// accepts every arm.
	Joins func(a Allocator) bool
	// Control marks the pure-compute control that every shape with fixed
	// total work is judged against; the runner brings it in when needed.
	Control bool
}

// Way is one row of a WayShape.
type Way struct {
	Name string // the way= key in results.txt
	Doc  string // one line for -h
	Run  func(t *Trial) (Sample, error)
}

// Trial is one measurement request: one shape, sub, row and worker count.
type Trial struct {
	Sub     Sub
	Row     string // the arm's or the way's name
	Workers int
	Long    bool
	// HeapSize is Config.HeapSize: a big heap's size in bytes, or 0 for
	// the shape's own.
	HeapSize int64
	scale    float64
	note     func(trial, what string) // the run's progress, for Note
	name     string                   // the trial's benchmark name, for Note
}

// Note tells the run's progress that the trial, still running, has reached
// stage what ("filled 4M of 10M entries"): a shape whose trials take
// seconds calls it every second or so, so that the run is never silent for
// long.
func (t *Trial) Note(what string) {
	if t.note != nil {
		t.note(t.name, what)
	}
}

// Size returns the amount of work to do: quick or long (for -long), scaled
// down by the test scale and by the runner's calibration, never below 1.
// The scale is the same at every worker count of a (sub, row), so a shape
// with fixed total work keeps its total fixed as the workers vary.
func (t *Trial) Size(quick, long int) int {
	n := quick
	if t.Long {
		n = long
	}
	if t.scale > 0 && t.scale < 1 {
		n = int(float64(n) * t.scale)
	}
	return max(n, 1)
}

// Sample is the result of one trial.
type Sample struct {
	Ops     int64         // operations timed (the unit of ns/op)
	Allocs  int64         // Alloc calls of a non-zero size the trial made, for the census check
	Elapsed time.Duration // from the release of the workers to the last one done
	Metrics map[string]float64
}

// shape is a registered ArmShape or WayShape as the runner sees it: the
// spec, its ways, and runArm, which runs the rows that are arms: every row
// of an ArmShape, the arms that join a WayShape (WayShape.Arms).
type shape struct {
	Spec
	rowKey  string // "arm" or "way"
	runArm  func(t *Trial, a Allocator) (Sample, error)
	joins   func(a Allocator) bool // nil: every arm
	ways    []Way
	control bool
}

// rows returns the shape's row names: its ways, or the arms that run, or
// (a WayShape that arms join, in a run that named arms) the named arms
// that may join, a way standing in for the arm of its name. probed holds
// an instance of each arm, for joins to look at.
func (s *shape) rows(arms []*Arm, named bool, probed map[string]Allocator) []string {
	var rows []string
	if s.runArm == nil || len(s.ways) > 0 && !named {
		for _, w := range s.ways {
			rows = append(rows, w.Name)
		}
		return rows
	}
	for _, a := range arms {
		switch {
		case s.way(a.Name) != nil:
			rows = append(rows, a.Name)
		case a.OwnerFrees && s.CrossFrees, a.Only != nil && !slices.Contains(a.Only, s.Name):
		case s.joins == nil || s.joins(probed[a.Name]):
			rows = append(rows, a.Name)
		}
	}
	return rows
}

// way returns the way named name, or nil.
func (s *shape) way(name string) *Way {
	for i := range s.ways {
		if s.ways[i].Name == name {
			return &s.ways[i]
		}
	}
	return nil
}

var registry struct {
	sync.Mutex
	arms   map[string]*Arm
	shapes map[string]*shape
}

// RegisterArm adds an arm. It panics on a duplicate or empty name: that is a
// programming error found at start-up.
func RegisterArm(a Arm) {
	registry.Lock()
	defer registry.Unlock()
	if a.Name == "" || a.New == nil {
		panic("bench: RegisterArm needs a Name and a New")
	}
	if registry.arms == nil {
		registry.arms = map[string]*Arm{}
	}
	if _, dup := registry.arms[a.Name]; dup {
		panic(fmt.Sprintf("bench: arm %q registered twice", a.Name))
	}
	registry.arms[a.Name] = &a
}

// RegisterArmShape adds a shape whose rows are the arms. It panics on a
// duplicate or malformed shape.
func RegisterArmShape(s ArmShape) {
	if s.Run == nil {
		panic(fmt.Sprintf("bench: arm shape %q needs a Run", s.Name))
	}
	register(&shape{Spec: s.Spec, rowKey: "arm", runArm: s.Run})
}

// RegisterWayShape adds a shape with rows of its own. It panics on a
// duplicate or malformed shape.
func RegisterWayShape(s WayShape) {
	if len(s.Ways) == 0 {
		panic(fmt.Sprintf("bench: way shape %q needs Ways", s.Name))
	}
	for _, w := range s.Ways {
		if w.Name == "" || w.Run == nil {
			panic(fmt.Sprintf("bench: way shape %q: every way needs a Name and a Run", s.Name))
		}
	}
	register(&shape{Spec: s.Spec, rowKey: "way", ways: s.Ways, runArm: s.Arms, joins: s.Joins, control: s.Control})
}

func register(s *shape) {
	registry.Lock()
	defer registry.Unlock()
	if s.Name == "" || s.Work == "" {
		panic("bench: a shape needs a Name and a Work")
	}
	if registry.shapes == nil {
		registry.shapes = map[string]*shape{}
	}
	if _, dup := registry.shapes[s.Name]; dup {
		panic(fmt.Sprintf("bench: shape %q registered twice", s.Name))
	}
	if len(s.Subs) == 0 {
		s.Subs = []Sub{{}}
	}
	if s.Unit == "" {
		s.Unit = "op"
	}
	registry.shapes[s.Name] = s
}

// Arms returns every registered arm, default arms first, then by name.
func Arms() []*Arm {
	registry.Lock()
	defer registry.Unlock()
	var as []*Arm
	for _, a := range registry.arms {
		as = append(as, a)
	}
	sort.Slice(as, func(i, j int) bool {
		if as[i].Default != as[j].Default {
			return as[i].Default
		}
		return armRank(as[i].Name) < armRank(as[j].Name) ||
			armRank(as[i].Name) == armRank(as[j].Name) && as[i].Name < as[j].Name
	})
	return as
}

// armRank keeps the well-known arms in a readable order in tables; other
// arms sort by name after them.
func armRank(name string) int {
	for i, n := range []string{"offheap", "offheap-local", "offheap-nomag", "go-make", "sync-pool", "pin-floor", "null"} {
		if n == name {
			return i
		}
	}
	return 100
}

// ShapeDoc is what -h shows of a registered shape.
type ShapeDoc struct {
	Spec
	Ways []Way // nil for a shape whose rows are the arms
}

// Shapes returns every registered shape in report order.
func Shapes() []ShapeDoc {
	var out []ShapeDoc
	for _, s := range shapes() {
		out = append(out, ShapeDoc{Spec: s.Spec, Ways: s.ways})
	}
	return out
}

func shapes() []*shape {
	registry.Lock()
	defer registry.Unlock()
	var ss []*shape
	for _, s := range registry.shapes {
		ss = append(ss, s)
	}
	sort.Slice(ss, func(i, j int) bool {
		if ss[i].Order != ss[j].Order {
			return ss[i].Order < ss[j].Order
		}
		return ss[i].Name < ss[j].Name
	})
	return ss
}

// lookupShapes resolves names to shapes; nil or empty means every quick
// shape. An unknown name is an error that lists the valid ones.
func lookupShapes(names []string) ([]*shape, error) {
	out, err := lookup(names, shapes(), func(s *shape) (string, bool) { return s.Name, s.Quick }, "shape", "shapes")
	sort.SliceStable(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out, err
}

// LookupArms resolves names to arms; nil or empty means every default arm.
// An unknown name is an error that lists the valid ones.
func LookupArms(names []string) ([]*Arm, error) {
	return lookup(names, Arms(), func(a *Arm) (string, bool) { return a.Name, a.Default }, "arm", "arms (this build)")
}

// lookup resolves names among all, once each and in the order given; no
// names means the default ones. key gives an entry's name and whether it is
// a default.
func lookup[T comparable](names []string, all []T, key func(T) (string, bool), what, whats string) ([]T, error) {
	var out []T
	if len(names) == 0 {
		for _, x := range all {
			if _, dflt := key(x); dflt {
				out = append(out, x)
			}
		}
		return out, nil
	}
	byName := map[string]T{}
	var valid []string
	for _, x := range all {
		name, _ := key(x)
		byName[name] = x
		valid = append(valid, name)
	}
	for _, n := range names {
		x, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("unknown %s %q; valid %s: %s", what, n, whats, strings.Join(valid, ", "))
		}
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out, nil
}
