package bench_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/offheap/offheap/cmd/offheap/internal/arms"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	_ "github.com/offheap/offheap/cmd/offheap/internal/shapes"
)

// testArms are the arms every shape is checked against: the two offheap
// arms have censuses the runner checks after every trial.
var testArms = []string{"offheap", "offheap-nomag", "go-make", "sync-pool", "null"}

// tiny shrinks every shape to a smoke test: large enough to exercise the
// magazines' refills and spills, small enough for -race -short.
func tiny() float64 {
	if testing.Short() {
		return 0.0005
	}
	return 0.003
}

func config(shapes ...string) bench.Config {
	return bench.Config{Shapes: shapes, Arms: testArms, Workers: []int{1, 2, 3}, Runs: 1, Scale: tiny(), TrialTime: -1}
}

// shared runs every registered quick-or-not shape once and lets the tests
// below look at the same report.
var shared struct {
	once sync.Once
	r    *bench.Report
	err  error
}

func fullReport(t *testing.T) *bench.Report {
	t.Helper()
	shared.once.Do(func() {
		var names []string
		for _, s := range bench.Shapes() {
			if !strings.HasPrefix(s.Name, "test-") {
				names = append(names, s.Name)
			}
		}
		cfg := config(names...)
		cfg.Runs = 2
		shared.r, shared.err = bench.Run(cfg)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.r
}

// TestEveryShape runs every shape against every arm. The runner fails the
// run when an offheap arm's Stats().Allocs differs from the allocations
// the shape says it made, or when bytes are still in use after a trial, so
// passing means every shape counts its operations and leaks nothing.
func TestEveryShape(t *testing.T) {
	r := fullReport(t)
	specs := map[string]bench.ShapeDoc{}
	for _, s := range bench.Shapes() {
		specs[s.Name] = s
	}
	for _, sh := range r.Shapes {
		for i, sub := range sh.Subs {
			for _, row := range sh.Rows {
				for wi, w := range sh.Workers {
					s := r.Find(sh.Name, sub, row, w)
					if wi > 0 && specs[sh.Name].Subs[i].FirstWorkers {
						if s != nil {
							t.Errorf("%s %s %s w=%d: measured, but the sub runs at the first worker count only", sh.Name, sub, row, w)
						}
						continue
					}
					if s == nil {
						t.Errorf("%s %s %s w=%d: no summary", sh.Name, sub, row, w)
						continue
					}
					if s.Runs != r.Runs || s.MinNs <= 0 || s.MedianNs < s.MinNs {
						t.Errorf("%s %s %s w=%d: bad summary %+v", sh.Name, sub, row, w, s)
					}
				}
			}
		}
	}
	for _, m := range r.Samples {
		if m.Ops <= 0 || m.Elapsed <= 0 {
			t.Errorf("sample %+v: no work", m)
		}
	}
	if len(r.Verdicts) == 0 {
		t.Error("no verdicts")
	}
}

// TestArmsDiffer: the control arm has no magazine hits, the default arm
// has, so the two arms really are different allocators.
func TestArmsDiffer(t *testing.T) {
	r := fullReport(t)
	n := 0
	for _, m := range r.Samples {
		if m.Shape != "pairs" {
			continue
		}
		hit, ok := m.Metrics[bench.MetricHitRate]
		switch m.Row {
		case "offheap-nomag":
			n++
			if !ok || hit != 0 {
				t.Errorf("%s w=%d: offheap-nomag magazine hit rate %v (present %v), want 0", m.Sub, m.Workers, hit, ok)
			}
		case "offheap":
			n++
			// The small blocks: a checked heap (-tags offheapchecked)
			// quarantines what a trial this short frees, and gives a
			// block of 256 KiB and its canary a page run of its own.
			small := slices.Contains([]string{"size=64", "size=64-unzeroed", "size=16-4096"}, m.Sub)
			if small && (!ok || hit <= 0) {
				t.Errorf("%s w=%d: offheap magazine hit rate %v (present %v), want > 0", m.Sub, m.Workers, hit, ok)
			}
		case "go-make":
			if ok {
				t.Errorf("go-make has a magazine hit rate")
			}
		}
	}
	if n == 0 {
		t.Fatal("no pairs samples for the offheap arms")
	}
}

// TestReportFiles writes the report and reads every file back.
func TestReportFiles(t *testing.T) {
	r := fullReport(t)
	dir := t.TempDir()
	if err := bench.WriteDir(dir, r); err != nil {
		t.Fatal(err)
	}
	lines := checkBenchFormat(t, filepath.Join(dir, "results.txt"))
	if lines != len(r.Samples) {
		t.Errorf("results.txt: %d benchmark lines, want one per sample (%d)", lines, len(r.Samples))
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(back.Samples) != len(r.Samples) || len(back.Summaries) != len(r.Summaries) {
		t.Errorf("results.json: %d samples, %d summaries; want %d, %d", len(back.Samples), len(back.Summaries), len(r.Samples), len(r.Summaries))
	}
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range r.Shapes {
		svg, err := os.ReadFile(filepath.Join(dir, sh.Name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(svg), "<svg") || !strings.HasSuffix(strings.TrimSpace(string(svg)), "</svg>") {
			t.Errorf("%s.svg is not an SVG document", sh.Name)
		}
		if !strings.Contains(string(html), `src="`+sh.Name+`.svg"`) {
			t.Errorf("index.html does not show %s.svg", sh.Name)
		}
	}
	if !strings.Contains(string(html), "</html>") || !strings.Contains(string(html), "Verdicts") {
		t.Error("index.html is incomplete")
	}
	var text strings.Builder
	if err := bench.WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== pairs", "-- pairs size=64:", "xoffheap-nomag", "xgo-make", "== verdicts", bench.MetricHitRate} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if len(line) > bench.Width {
			t.Errorf("text report: a line of %d columns, wider than %d: %q", len(line), bench.Width, line)
		}
	}
}

// checkBenchFormat parses a results.txt the way benchstat does: a header of
// key: value lines, then Benchmark lines of name, iterations and value-unit
// pairs. It returns the number of benchmark lines.
func checkBenchFormat(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	header := map[string]bool{}
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, _, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "Benchmark") {
			header[k] = true
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || len(fields)%2 != 0 || !strings.HasPrefix(fields[0], "Benchmark") {
			t.Errorf("results.txt: malformed line %q", line)
			continue
		}
		if parts := strings.Split(fields[0], "/"); !strings.HasPrefix(parts[len(parts)-1], "workers=") {
			t.Errorf("results.txt: %s does not end in workers=N", fields[0])
		}
		if it, err := strconv.ParseInt(fields[1], 10, 64); err != nil || it <= 0 {
			t.Errorf("results.txt: bad iteration count in %q", line)
		}
		for i := 2; i < len(fields); i += 2 {
			if _, err := strconv.ParseFloat(fields[i], 64); err != nil {
				t.Errorf("results.txt: bad value %q in %q", fields[i], line)
			}
		}
		if fields[3] != "ns/op" {
			t.Errorf("results.txt: first unit %q, want ns/op", fields[3])
		}
		n++
	}
	for _, k := range []string{"goos", "goarch", "pkg", "cpu"} {
		if !header[k] {
			t.Errorf("results.txt: no %s: header", k)
		}
	}
	return n
}

func TestUnknownNames(t *testing.T) {
	_, err := bench.Run(bench.Config{Shapes: []string{"no-such-shape"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-shape") || !strings.Contains(err.Error(), "pairs") {
		t.Errorf("unknown shape: error %v, want one naming it and listing the valid shapes", err)
	}
	_, err = bench.Run(bench.Config{Shapes: []string{"pairs"}, Arms: []string{"tcmalloc"}})
	if err == nil || !strings.Contains(err.Error(), "tcmalloc") || !strings.Contains(err.Error(), "offheap-nomag") {
		t.Errorf("unknown arm: error %v, want one naming it and listing the valid arms", err)
	}
}

// A test arm that cannot be made, and a test shape that leaks: the first is
// skipped, the second must fail the run through the census check.
func init() {
	bench.RegisterArm(bench.Arm{
		Name: "test-broken",
		Doc:  "an arm whose New fails",
		New:  func() (bench.Allocator, error) { return nil, errors.New("no such allocator here") },
	})
	bench.RegisterArm(bench.Arm{
		Name:       "test-owner",
		Doc:        "make, for an arm whose blocks only the allocating worker may free",
		OwnerFrees: true,
		New:        func() (bench.Allocator, error) { return ownerOnly{}, nil },
	})
	bench.RegisterArmShape(bench.ArmShape{
		Spec: bench.Spec{Name: "test-leak", Doc: "allocates <b>one</b> block & never frees it", Work: bench.FixedPerWorker},
		Run: func(_ *bench.Trial, a bench.Allocator) (bench.Sample, error) {
			el := bench.Parallel(1, func(int) { a.Alloc(100) })
			return bench.Sample{Ops: 1, Allocs: 1, Elapsed: max(el, time.Nanosecond)}, nil
		},
	})
	bench.RegisterArmShape(bench.ArmShape{
		Spec: bench.Spec{Name: "test-first-workers", Doc: "one pair, in a sub at every worker count and one at the first only", Work: bench.FixedPerWorker,
			Subs: []bench.Sub{{Name: "all"}, {Name: "first", FirstWorkers: true}}},
		Run: func(t *bench.Trial, a bench.Allocator) (bench.Sample, error) {
			el := bench.Parallel(t.Workers, func(int) { a.Free(a.Alloc(100)) })
			return bench.Sample{Ops: 1, Allocs: int64(t.Workers), Elapsed: max(el, time.Nanosecond)}, nil
		},
	})
	bench.RegisterArmShape(bench.ArmShape{
		Spec: bench.Spec{Name: "test-contended", Doc: "a trial that takes a microsecond per op per worker, as a contended lock's does",
			Work: bench.FixedTotal, Runs: 2},
		Run: func(t *bench.Trial, _ bench.Allocator) (bench.Sample, error) {
			n := t.Size(1_000_000, 1_000_000)
			return bench.Sample{Ops: int64(n), Elapsed: time.Duration(n*t.Workers) * time.Microsecond}, nil
		},
	})
	bench.RegisterArmShape(bench.ArmShape{
		Spec: bench.Spec{Name: "test-miscount", Doc: "says it allocated twice as often as it did", Work: bench.FixedPerWorker},
		Run: func(_ *bench.Trial, a bench.Allocator) (bench.Sample, error) {
			el := bench.Parallel(1, func(int) { a.Free(a.Alloc(100)) })
			return bench.Sample{Ops: 1, Allocs: 2, Elapsed: max(el, time.Nanosecond)}, nil
		},
	})
}

// TestFirstWorkers: a sub marked FirstWorkers runs at the first worker
// count only, the others at every count, and the progress reports count
// exactly the trials made.
func TestFirstWorkers(t *testing.T) {
	cfg := config("test-first-workers")
	cfg.Arms = []string{"null"}
	var last bench.Progress
	cfg.Progress = func(p bench.Progress) { last = p }
	r, err := bench.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range r.Samples {
		got = append(got, m.Sub+"/"+strconv.Itoa(m.Workers))
	}
	if want := "all/1,all/2,all/3,first/1"; strings.Join(got, ",") != want {
		t.Errorf("trials %v, want %s", got, want)
	}
	if last.Done != len(r.Samples) || last.Total != len(r.Samples) || !last.ShapeDone {
		t.Errorf("last progress %+v, want %d of %d trials, shape done", last, len(r.Samples), len(r.Samples))
	}
}

// TestCalibrateSlowestWorkers: a shape whose trials take longer at more
// workers is sized so that its slowest worker count's trial takes about
// TrialTime, not its one-worker trial (which would make the three-worker
// trial take three TrialTimes), and the size is one for every count.
func TestCalibrateSlowestWorkers(t *testing.T) {
	cfg := config("test-contended")
	cfg.Arms = []string{"null"}
	cfg.TrialTime = time.Millisecond
	r, err := bench.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[int64]bool{}
	for _, m := range r.Samples {
		if m.Shape != "test-contended" {
			continue // the compute control, which a shape of fixed total work brings
		}
		ops[m.Ops] = true
		if m.Workers == 3 && (m.Elapsed < 800*time.Microsecond || m.Elapsed > 1250*time.Microsecond) {
			t.Errorf("the 3-worker trial took %v, want about the TrialTime, %v", m.Elapsed, cfg.TrialTime)
		}
	}
	if len(ops) != 1 {
		t.Errorf("trials of %v ops, want one size for every worker count", ops)
	}
}

// TestShapeRuns: a shape that caps its runs (Spec.Runs) makes that many in
// a quick run, says so in its table, and makes -runs in a -long one.
func TestShapeRuns(t *testing.T) {
	for _, long := range []bool{false, true} {
		cfg := config("test-contended")
		cfg.Arms = []string{"null"}
		cfg.Workers = []int{1}
		cfg.Runs, cfg.Long = 3, long
		var last bench.Progress
		cfg.Progress = func(p bench.Progress) { last = p }
		r, err := bench.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := 2
		if long {
			want = 3
		}
		if len(r.Samples) != want || r.Shapes[0].Runs != want || last.Total != want {
			t.Errorf("long %v: %d trials, the shape says %d runs, progress counted %d; want %d", long, len(r.Samples), r.Shapes[0].Runs, last.Total, want)
		}
		var text strings.Builder
		bench.WriteText(&text, r)
		if w := "min and median of " + strconv.Itoa(want) + " runs"; !strings.Contains(text.String(), w) {
			t.Errorf("long %v: the table does not say %q:\n%s", long, w, text.String())
		}
	}
}

func TestUnavailableArm(t *testing.T) {
	cfg := config("pairs")
	cfg.Arms = []string{"offheap", "test-broken", "offheap-checked"}
	cfg.Workers = []int{1}
	r, err := bench.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if why := r.Unavailable["test-broken"]; !strings.Contains(why, "no such allocator") {
		t.Errorf("Unavailable[test-broken] = %q", why)
	}
	for _, m := range r.Samples {
		if m.Row == "test-broken" {
			t.Fatal("an unavailable arm was measured")
		}
	}
	var text strings.Builder
	bench.WriteText(&text, r)
	if !strings.Contains(text.String(), "arm test-broken: unavailable: no such allocator here") {
		t.Errorf("text report does not say the arm is unavailable:\n%s", text.String())
	}
}

func TestCensusCatchesLeakAndMiscount(t *testing.T) {
	for _, shape := range []string{"test-leak", "test-miscount"} {
		cfg := config(shape)
		cfg.Arms = []string{"offheap"}
		cfg.Workers = []int{1}
		_, err := bench.Run(cfg)
		if err == nil || !strings.Contains(err.Error(), "census") {
			t.Errorf("%s: error %v, want a census error", shape, err)
		}
	}
}

func TestHTMLEscapes(t *testing.T) {
	cfg := config("test-leak")
	cfg.Arms = []string{"go-make"} // no census, so the leak goes unnoticed
	cfg.Workers = []int{1}
	r, err := bench.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := bench.WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<b>one</b>") || !strings.Contains(b.String(), "&lt;b&gt;one&lt;/b&gt;") {
		t.Error("index.html does not escape a shape's doc")
	}
}

func TestDefaults(t *testing.T) {
	w := bench.DefaultWorkers()
	for i := 1; i < len(w); i++ {
		if w[i] <= w[i-1] {
			t.Errorf("DefaultWorkers %v: not sorted and deduplicated", w)
		}
	}
	for _, s := range bench.Shapes() {
		if strings.HasPrefix(s.Name, "test-") && s.Quick {
			t.Errorf("test shape %s is in the default list", s.Name)
		}
	}
	arms, _ := bench.LookupArms(nil)
	var names []string
	for _, a := range arms {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, ","); got != "offheap,offheap-local,offheap-nomag,go-make,sync-pool,pin-floor,null" {
		t.Errorf("default arms %s", got)
	}
}

func TestBenchName(t *testing.T) {
	if got := bench.BenchName("live-k", "k=3", "arm", "offheap", 2); got != "LiveK/k=3/arm=offheap/workers=2" {
		t.Errorf("BenchName = %q", got)
	}
}

type ownerOnly struct{}

func (ownerOnly) Alloc(n int) []byte { return make([]byte, n) }
func (ownerOnly) Free([]byte)        {}

// TestOwnerFrees: an arm whose blocks only their allocating worker may free
// runs on the shapes where that holds, and is left out of the others.
func TestOwnerFrees(t *testing.T) {
	cfg := config("pairs", "prodcons")
	cfg.Arms = []string{"offheap", "test-owner"}
	cfg.Workers = []int{1}
	r, err := bench.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rows := r.Shape("pairs").Rows; !slices.Contains(rows, "test-owner") {
		t.Errorf("pairs rows %v: the owner-frees arm is missing", rows)
	}
	if rows := r.Shape("prodcons").Rows; slices.Contains(rows, "test-owner") || !slices.Contains(rows, "offheap") {
		t.Errorf("prodcons rows %v: want offheap and not the owner-frees arm", rows)
	}
}
