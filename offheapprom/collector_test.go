//go:build !offheapchecked

// The figures below are a fast heap's: checked mode's blocks are larger.

package offheapprom

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cache"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// newHeap is a heap without magazines, whose census does not depend on
// which P a goroutine runs on, and that releases free pages at once.
func newHeap(t *testing.T) *offheap.Heap {
	t.Helper()
	h, err := offheap.NewHeap(offheap.Options{MagazineDepth: -1, ReleaseDelay: -1, ProfileBytes: -1}) // exact sources: a sampled 64-byte block would count as large
	if err != nil {
		t.Skip(err) // a system without a backend
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// work allocates three 64-byte blocks and frees one, and allocates and
// frees a 1 MiB block, which goes back to the operating system.
func work(h *offheap.Heap) {
	a := h.Alloc(64)
	h.Free(h.Alloc(64))
	h.Alloc(64)
	_ = a
	h.Free(h.Alloc(1 << 20))
}

// TestCollector compares a scrape with the heap's known operations, and
// lints it.
func TestCollector(t *testing.T) {
	h := newHeap(t)
	c := NewCollector(h, Opts{Name: "test"})
	work(h)
	s := h.Stats()
	want := fmt.Sprintf(`
# HELP offheap_allocs_total Allocations of non-empty blocks, by where they were served: a per-P magazine, a Local (Heap.NewLocal), a central free list, a never-used block of a span, or pages of their own (large).
# TYPE offheap_allocs_total counter
offheap_allocs_total{heap="test",source="local"} 0
offheap_allocs_total{heap="test",source="central"} 1
offheap_allocs_total{heap="test",source="fresh"} 2
offheap_allocs_total{heap="test",source="large"} 1
offheap_allocs_total{heap="test",source="magazine"} 0
# HELP offheap_local_bytes Bytes of free blocks held by open Locals (Heap.NewLocal).
# TYPE offheap_local_bytes gauge
offheap_local_bytes{heap="test"} 0
# HELP offheap_corrupt_bytes Bytes of free blocks the heap abandoned because a write after free corrupted their span's free list: nonzero means a use-after-free bug.
# TYPE offheap_corrupt_bytes gauge
offheap_corrupt_bytes{heap="test"} 0
# HELP offheap_depot_bytes Bytes of free blocks in the central depots, waiting for a magazine.
# TYPE offheap_depot_bytes gauge
offheap_depot_bytes{heap="test"} 0
# HELP offheap_frees_total Frees of non-empty blocks.
# TYPE offheap_frees_total counter
offheap_frees_total{heap="test"} 2
# HELP offheap_inuse_bytes Bytes in live blocks, each counted at its block size.
# TYPE offheap_inuse_bytes gauge
offheap_inuse_bytes{heap="test"} 128
# HELP offheap_live_blocks Blocks allocated and not yet freed.
# TYPE offheap_live_blocks gauge
offheap_live_blocks{heap="test"} 2
# HELP offheap_magazine_bytes Bytes of free blocks parked in per-P magazines.
# TYPE offheap_magazine_bytes gauge
offheap_magazine_bytes{heap="test"} 0
# HELP offheap_mapped_bytes Address space committed and not released: what the heap may cost in memory, not what is resident (see offheap_resident_bytes).
# TYPE offheap_mapped_bytes gauge
offheap_mapped_bytes{heap="test"} %d
# HELP offheap_released_bytes Address space given back to the operating system and kept reserved for reuse.
# TYPE offheap_released_bytes gauge
offheap_released_bytes{heap="test"} 1.048576e+06
# HELP offheap_relocations_total Blocks Relocate moved.
# TYPE offheap_relocations_total counter
offheap_relocations_total{heap="test"} 0
# HELP offheap_span_free_bytes Free bytes of small-block spans that no magazine, depot or Local holds: what a Relocate pass could give back.
# TYPE offheap_span_free_bytes gauge
offheap_span_free_bytes{heap="test"} %d
`, s.MappedBytes, s.SpanFreeBytes)
	if s.MappedBytes == 0 || s.MappedBytes == s.ReleasedBytes {
		t.Fatalf("MappedBytes %d, ReleasedBytes %d: the test needs them apart", s.MappedBytes, s.ReleasedBytes)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(NewCollector(h, Opts{Name: "test", Classes: true, Resident: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// gather registers collectors with a pedantic registry, which checks that
// Collect sends only what Describe described, and returns its metrics by
// name.
func gather(t *testing.T, cs ...prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]*dto.MetricFamily)
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestCollectorClasses checks the per-class series: one per class and
// metric, the 64-byte class with the test's blocks, the others empty.
func TestCollectorClasses(t *testing.T) {
	h := newHeap(t)
	work(h)
	mfs := gather(t, NewCollector(h, Opts{Name: "test", Classes: true}))
	s := h.Stats()
	for _, f := range []struct {
		name   string
		want64 float64
		value  func(*dto.Metric) float64
	}{
		{"offheap_class_allocs_total", 3, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }},
		{"offheap_class_frees_total", 1, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }},
		{"offheap_class_live_blocks", 2, func(m *dto.Metric) float64 { return m.GetGauge().GetValue() }},
	} {
		mf := mfs[f.name]
		if mf == nil {
			t.Errorf("no %s", f.name)
			continue
		}
		if len(mf.GetMetric()) != len(s.Classes) {
			t.Errorf("%s: %d series, want one per class (%d)", f.name, len(mf.GetMetric()), len(s.Classes))
		}
		for _, m := range mf.GetMetric() {
			want := 0.0
			if label(m, "size") == "64" {
				want = f.want64
			}
			if got := f.value(m); got != want || label(m, "heap") != "test" {
				t.Errorf(`%s{heap=%q,size=%q} = %v, want heap "test" and %v`, f.name, label(m, "heap"), label(m, "size"), got, want)
			}
		}
	}
	if mfs["offheap_resident_bytes"] != nil {
		t.Error("offheap_resident_bytes without Opts.Resident")
	}
}

// TestCollectorResident checks offheap_resident_bytes against the heap's
// own figure, and that it is left out once the heap is closed.
func TestCollectorResident(t *testing.T) {
	h := newHeap(t)
	b := h.Alloc(4 << 20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	c := NewCollector(h, Opts{Name: "test", Resident: true})
	mf := gather(t, c)["offheap_resident_bytes"]
	want, err := h.ResidentBytes()
	if err != nil {
		t.Fatal(err)
	}
	if mf == nil || mf.GetMetric()[0].GetGauge().GetValue() != float64(want) || want < 4<<20 {
		t.Errorf("offheap_resident_bytes = %v, want the heap's ResidentBytes %d (at least the 4 MiB touched)", mf, want)
	}
	h.Close()
	if mf := gather(t, c)["offheap_resident_bytes"]; mf != nil {
		t.Errorf("a closed heap: offheap_resident_bytes = %v, want it left out", mf)
	}
}

// TestCollectorHeaps registers two heaps in one registry under different
// names, and refuses a second collector with a name already registered.
func TestCollectorHeaps(t *testing.T) {
	h1, h2 := newHeap(t), newHeap(t)
	h1.Alloc(100)
	h2.Alloc(100)
	h2.Alloc(100)
	mf := gather(t, NewCollector(h1, Opts{Name: "one"}), NewCollector(h2, Opts{Name: "two"}))["offheap_live_blocks"]
	got := map[string]float64{}
	for _, m := range mf.GetMetric() {
		got[label(m, "heap")] = m.GetGauge().GetValue()
	}
	if len(got) != 2 || got["one"] != 1 || got["two"] != 2 {
		t.Errorf("offheap_live_blocks by heap = %v, want one: 1, two: 2", got)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(h1, Opts{Name: "one"}))
	if err := reg.Register(NewCollector(h2, Opts{Name: "one"})); err == nil {
		t.Error("a second heap registered under the name of the first")
	}
}

func TestNewCollectorRefuses(t *testing.T) {
	h := newHeap(t)
	for _, tc := range []struct {
		h    *offheap.Heap
		opts Opts
		want string
	}{
		{nil, Opts{Name: "x"}, "nil heap"},
		{h, Opts{}, "Opts.Name is empty"},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "offheap:") || !strings.Contains(msg, tc.want) {
					t.Errorf("panic %q, want one starting \"offheap:\" containing %q", msg, tc.want)
				}
			}()
			NewCollector(tc.h, tc.opts)
		}()
	}
}

// TestDocNamesEveryMetric checks the package doc's table against a scrape
// with every option on, and a cache's: each metric's name, and each value
// of its source label, is in the doc.
func TestDocNamesEveryMetric(t *testing.T) {
	src, err := os.ReadFile("collector.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(src), "\npackage offheapprom")
	_, sources, _ := strings.Cut(doc, "source=")
	sources, _, _ = strings.Cut(sources, "\n")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(newHeap(t), Opts{Name: "doc", Classes: true, Resident: true}))
	if c, err := cache.New(cache.Options{MaxBytes: 1 << 20}); err == nil {
		defer c.Close()
		reg.MustRegister(NewCacheCollector(c, "doc"))
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if !strings.Contains(doc, "//\t"+f.GetName()+" ") && !strings.Contains(doc, "//\t"+f.GetName()+"{") {
			t.Errorf("the package doc's table has no line for %s", f.GetName())
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && !strings.Contains(sources, `"`+l.GetValue()+`"`) {
					t.Errorf("the package doc does not name %s's source %q", f.GetName(), l.GetValue())
				}
			}
		}
	}
}

// missing returns the uint64 fields of t that stats does not export and
// summed does not name, and the stats whose field t lacks.
func missing(t reflect.Type, stats []stat, summed map[string]bool) []string {
	exported := make(map[string]bool)
	var out []string
	for _, st := range stats {
		exported[st.field] = true
		if f, ok := t.FieldByName(st.field); !ok || f.Type.Kind() != reflect.Uint64 {
			out = append(out, "no uint64 field "+st.field)
		}
	}
	for f := range t.Fields() {
		if f.Type.Kind() == reflect.Uint64 && !exported[f.Name] && !summed[f.Name] {
			out = append(out, "field "+f.Name+" not exported")
		}
	}
	return out
}

// TestEveryStatsField holds the tables to offheap.Stats and
// offheap.ClassStats: a field added to either without a metric fails here.
func TestEveryStatsField(t *testing.T) {
	if m := missing(reflect.TypeFor[offheap.Stats](), heapStats, summed); m != nil {
		t.Errorf("offheap.Stats: %v", m)
	}
	if m := missing(reflect.TypeFor[offheap.ClassStats](), classStats, nil); m != nil {
		t.Errorf("offheap.ClassStats: %v", m)
	}
	// The positive control: a Stats with one field more, and a table with
	// a field that Stats lacks, are both caught.
	type grown struct {
		offheap.Stats
		NewFigure uint64
	}
	if m := missing(reflect.TypeFor[grown](), heapStats, summed); len(m) != 1 || !strings.Contains(m[0], "NewFigure") {
		t.Errorf("a Stats with a field more: missing reports %v, want NewFigure", m)
	}
	stale := append(classStats[:len(classStats):len(classStats)], stat{field: "Gone", metric: "class_gone"})
	if m := missing(reflect.TypeFor[offheap.ClassStats](), stale, nil); len(m) != 1 || !strings.Contains(m[0], "Gone") {
		t.Errorf("a table naming a field ClassStats lacks: missing reports %v, want Gone", m)
	}
}
