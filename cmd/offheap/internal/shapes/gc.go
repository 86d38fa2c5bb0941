package shapes

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterWayShape(bench.WayShape{
		Spec: bench.Spec{
			Name: "gc",
			Doc: "a live set of 32 B values (1M; -long 20M) held on the Go heap with pointers, in one pointer-free Go slab, in offheap behind a " +
				"[]Ref index, or behind a map from uint64 keys (values from make, offheap values as []byte, offheap values as Refs), " +
				"while a churn loop replaces values and makes garbage: GC CPU share, cycles, p99 churn op",
			Work:    bench.FixedTotal,
			Quick:   true,
			Order:   80,
			Unit:    "churn-op",
			Workers: []int{1},
			// A trial takes 0.2-1.1 s, building a million values, and its
			// GC CPU share moves little run to run: three runs keep the
			// default run's length (docs/benchmarks.md).
			Runs: 3,
			Metrics: []bench.Metric{
				{Name: gcCPU, Doc: "GC CPU share, % of all CPU time during the churn", Label: "GC CPU share, % of all CPU time"},
				{Name: "gc-cycles", Doc: "garbage collections during the churn"},
				{Name: gcForced, Doc: "one collection forced (runtime.GC) once the live set is built: the time to mark the live set, in ms"},
				{Name: "p99-ns", Doc: "99th percentile of one churn op (replace a value, make 128 B of garbage), in ns"},
				{Name: "total-ms", Doc: "the whole trial, building the live set included, in ms"},
			},
			Plot:      []string{gcCPU},
			FixedSize: true,
			Verdicts:  gcVerdicts,
		},
		Ways: []bench.Way{
			{Name: "go-pointers", Doc: "each value its own Go object, n pointers for every cycle to trace", Run: gcWayRun(gcPointers)},
			{Name: "go-slab", Doc: "every value in one pointer-free []byte, nothing to trace", Run: gcWayRun(gcSlab)},
			{Name: "offheap", Doc: "each value an offheap block behind a []offheap.Ref index, nothing to trace", Run: gcWayRun(gcOffheap)},
			{Name: "map-make", Doc: "a map[uint64][]byte of values from make: n slice headers and n values to trace", Run: gcWayRun(gcMapMake)},
			{Name: "map-offheap", Doc: "a map[uint64][]byte of offheap blocks: n slice headers to scan, pointing off the Go heap", Run: gcWayRun(gcMapOffheap)},
			{Name: "map-ref", Doc: "a map[uint64]offheap.Ref of offheap blocks: no pointers, the map is never scanned", Run: gcWayRun(gcMapRef)},
		},
	})
}

// The gc shape's headline metric, and the cost of one collection.
const (
	gcCPU    = "gc-cpu-pct"
	gcForced = "forced-gc-ms"
)

const (
	gcValue   = 32  // bytes per value
	gcGarbage = 128 // bytes of garbage per churn op, the same for every way
	gcEvery   = 8   // one churn op in gcEvery is timed, for the p99
)

// gcSink keeps the churn loop's garbage reachable until the next op, so that
// the compiler cannot drop the allocation. The gc shape runs one worker.
var gcSink []byte

// gcWay is one way of holding the live set: build fills n values, replace
// swaps value i for a new one, done frees everything (and checks).
type gcWay struct {
	build   func(n int)
	replace func(i int, v uint64)
	done    func() error
}

// gcWayRun runs the gc shape with the way newWay makes for n values and
// ops churn ops.
func gcWayRun(newWay func(n, ops int) (gcWay, error)) func(t *bench.Trial) (bench.Sample, error) {
	return func(t *bench.Trial) (bench.Sample, error) {
		n := t.Size(1_000_000, 20_000_000)
		ops := t.Size(1_000_000, 20_000_000)
		way, err := newWay(n, ops)
		if err != nil {
			return bench.Sample{}, err
		}
		return runGC(way, n, ops)
	}
}

func runGC(way gcWay, n, ops int) (bench.Sample, error) {
	start := time.Now()
	way.build(n)
	// One collection with the live set built: what a cycle costs to mark
	// it, and a start for the churn's window at the end of a cycle.
	g0 := time.Now()
	runtime.GC()
	forced := time.Since(g0)
	before := readGCMetrics()
	lat := make([]int64, 0, ops/gcEvery+1)
	r := bench.NewRand(1)
	churn := time.Now()
	for i := range ops {
		if i%gcEvery == 0 {
			t0 := time.Now()
			way.replace(r.Intn(n), uint64(i))
			gcSink = make([]byte, gcGarbage)
			lat = append(lat, int64(time.Since(t0)))
			continue
		}
		way.replace(r.Intn(n), uint64(i))
		gcSink = make([]byte, gcGarbage)
	}
	el := time.Since(churn)
	after := readGCMetrics()
	total := time.Since(start)
	if len(gcSink) != gcGarbage {
		return bench.Sample{}, fmt.Errorf("the churn loop's garbage is missing")
	}
	gcSink = nil
	if err := way.done(); err != nil {
		return bench.Sample{}, err
	}
	slices.Sort(lat)
	m := map[string]float64{
		"gc-cycles": after.cycles - before.cycles,
		gcForced:    float64(forced.Microseconds()) / 1000,
		"p99-ns":    float64(lat[len(lat)*99/100]),
		"total-ms":  float64(total.Microseconds()) / 1000,
	}
	if cpu := after.total - before.total; cpu > 0 {
		m[gcCPU] = 100 * (after.gc - before.gc) / cpu
	}
	return bench.Sample{Ops: int64(ops), Elapsed: el, Metrics: m}, nil
}

// gcVerdicts judges what keeping Refs instead of slices in a map saves the
// collector: the GC CPU share of the churn with a map[uint64]Ref against a
// map[uint64][]byte of the same offheap blocks. The share is a median over
// the runs; the figure is not judged when the runs' own ratios (each way
// against the other in the same run) fall on both sides of the target.
func gcVerdicts(r *bench.Report) []bench.Verdict {
	const (
		name   = "gc-map-ref"
		figure = "GC CPU share during the churn, 1M offheap values behind a map: map[uint64]Ref / map[uint64][]byte"
		target = "<= 0.33x"
		limit  = 1.0 / 3
	)
	ref, why := find(r, "gc", "", "map-ref", 1)
	sl, why2 := find(r, "gc", "", "map-offheap", 1)
	if ref == nil || sl == nil {
		return []bench.Verdict{bench.Skip(name, figure, target, missing(why, why2))}
	}
	a, okA := ref.Metrics[gcCPU]
	b, okB := sl.Metrics[gcCPU]
	if !okA || !okB || b <= 0 {
		return []bench.Verdict{bench.Skip(name, figure, target, "no collection ended during the map ways' churn")}
	}
	v := bench.Verdict{Name: name, Figure: figure, Target: target, Value: a / b, Pass: a/b <= limit,
		Measured: fmt.Sprintf("%.2fx (%.2f%% vs %.2f%%; one forced collection %s vs %s ms)",
			a/b, a, b, bench.Num(ref.Metrics[gcForced]), bench.Num(sl.Metrics[gcForced]))}
	if lo, hi, ok := runRatios(r, "gc", "map-ref", "map-offheap", gcCPU); ok && lo <= limit && hi > limit {
		v.Inconclusive = true
		v.Note = fmt.Sprintf("runs on both sides of the target (%.2f-%.2fx)", lo, hi)
	}
	return []bench.Verdict{v}
}

// runRatios returns the least and the greatest ratio, over the runs, of
// metric in row a to metric in row b of the same run, at one worker.
func runRatios(r *bench.Report, shape, a, b, metric string) (lo, hi float64, ok bool) {
	byRun := map[int]map[string]float64{}
	for _, m := range r.Samples {
		v, has := m.Metrics[metric]
		if m.Shape != shape || m.Workers != 1 || !has {
			continue
		}
		if byRun[m.Run] == nil {
			byRun[m.Run] = map[string]float64{}
		}
		byRun[m.Run][m.Row] = v
	}
	for _, run := range byRun {
		va, hasA := run[a]
		vb, hasB := run[b]
		if !hasA || !hasB || vb <= 0 {
			continue
		}
		x := va / vb
		if !ok {
			lo, hi, ok = x, x, true
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi, ok
}

type gcMetrics struct{ gc, total, cycles float64 }

// readGCMetrics reads the collector's CPU time against all CPU time, and
// its cycle count. The runtime updates both CPU times together, at the end
// of each cycle's marking: a window that opens after a forced collection
// covers exactly the cycles that end in it, and the mutator's time between
// them, whatever the number of cycles.
func readGCMetrics() gcMetrics {
	s := []metrics.Sample{
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/total:cpu-seconds"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(s)
	f := func(v metrics.Value) float64 {
		switch v.Kind() {
		case metrics.KindFloat64:
			return v.Float64()
		case metrics.KindUint64:
			return float64(v.Uint64())
		}
		return 0
	}
	return gcMetrics{f(s[0].Value), f(s[1].Value), f(s[2].Value)}
}

// gcPointers holds each value in its own Go object: n pointers for every
// cycle to trace.
func gcPointers(int, int) (gcWay, error) {
	var vals []*[4]uint64
	return gcWay{
		build: func(n int) {
			vals = make([]*[4]uint64, n)
			for i := range vals {
				vals[i] = &[4]uint64{uint64(i)}
			}
		},
		replace: func(i int, v uint64) { vals[i] = &[4]uint64{v} },
		done:    func() error { vals = nil; return nil },
	}, nil
}

// gcSlab holds every value in one pointer-free []byte, indexed by offset:
// nothing to trace, the strongest Go-only answer, but only for values of one
// size that the program places itself.
func gcSlab(int, int) (gcWay, error) {
	var slab []byte
	return gcWay{
		build: func(n int) {
			slab = make([]byte, n*gcValue)
			for i := range n {
				slab[i*gcValue] = byte(i)
			}
		},
		replace: func(i int, v uint64) {
			b := slab[i*gcValue : (i+1)*gcValue]
			clear(b)
			b[0] = byte(v)
		},
		done: func() error { slab = nil; return nil },
	}, nil
}

// gcHeap is the heap of one offheap way's trial, and its census check: the
// heap must have counted the n values built and the ops replacements, and
// hold nothing once the way has freed everything.
type gcHeap struct {
	*offheap.Heap
	n, ops int
}

func newGCHeap(n, ops int) (gcHeap, error) {
	h, err := offheap.NewHeap(offheap.Options{})
	return gcHeap{h, n, ops}, err
}

// alloc returns a new value holding v.
func (h gcHeap) alloc(v uint64) []byte {
	b := h.Alloc(gcValue)
	b[0] = byte(v)
	return b
}

// done checks the census and closes the heap.
func (h gcHeap) done() error {
	st := h.Stats()
	if want := uint64(h.n + h.ops); st.Allocs != want || st.InUseBytes != 0 || st.LiveBlocks != 0 {
		h.Close()
		return fmt.Errorf("census: %d allocations counted (want %d), %d bytes in %d blocks in use after freeing all",
			st.Allocs, want, st.InUseBytes, st.LiveBlocks)
	}
	return h.Close()
}

// gcOffheap holds each value in its own offheap block, indexed by a
// []offheap.Ref: the index has no pointers, so the collector never looks
// into it (a [][]byte would be n pointers to scan).
func gcOffheap(n, ops int) (gcWay, error) {
	h, err := newGCHeap(n, ops)
	if err != nil {
		return gcWay{}, err
	}
	var idx []offheap.Ref
	return gcWay{
		build: func(n int) {
			idx = make([]offheap.Ref, n)
			for i := range idx {
				idx[i] = h.Ref(h.alloc(uint64(i)))
			}
		},
		replace: func(i int, v uint64) {
			h.FreeRef(idx[i])
			idx[i] = h.Ref(h.alloc(v))
		},
		done: func() error {
			for _, r := range idx {
				h.FreeRef(r)
			}
			idx = nil
			return h.done()
		},
	}, nil
}

// gcMapMake indexes values from make by a map[uint64][]byte, as a cache
// written without offheap does: the map's n slice headers and the n values
// they point to, for every cycle to trace.
func gcMapMake(int, int) (gcWay, error) {
	var m map[uint64][]byte
	return gcWay{
		build: func(n int) {
			m = make(map[uint64][]byte, n)
			for i := range n {
				b := make([]byte, gcValue)
				b[0] = byte(i)
				m[uint64(i)] = b
			}
		},
		replace: func(i int, v uint64) {
			b := make([]byte, gcValue)
			b[0] = byte(v)
			m[uint64(i)] = b
		},
		done: func() error { m = nil; return nil },
	}, nil
}

// gcMapOffheap indexes offheap blocks by a map[uint64][]byte: the values
// are off the Go heap, but each slice header in the map is a pointer, and
// the collector scans all n of them every cycle to find that they point to
// memory it does not own.
func gcMapOffheap(n, ops int) (gcWay, error) {
	h, err := newGCHeap(n, ops)
	if err != nil {
		return gcWay{}, err
	}
	var m map[uint64][]byte
	return gcWay{
		build: func(n int) {
			m = make(map[uint64][]byte, n)
			for i := range n {
				m[uint64(i)] = h.alloc(uint64(i))
			}
		},
		replace: func(i int, v uint64) {
			k := uint64(i)
			h.Free(m[k])
			m[k] = h.alloc(v)
		},
		done: func() error {
			for _, b := range m {
				h.Free(b)
			}
			m = nil
			return h.done()
		},
	}, nil
}

// gcMapRef indexes offheap blocks by a map[uint64]offheap.Ref: neither keys
// nor values hold a pointer, so the collector never scans the map.
func gcMapRef(n, ops int) (gcWay, error) {
	h, err := newGCHeap(n, ops)
	if err != nil {
		return gcWay{}, err
	}
	var m map[uint64]offheap.Ref
	return gcWay{
		build: func(n int) {
			m = make(map[uint64]offheap.Ref, n)
			for i := range n {
				m[uint64(i)] = h.Ref(h.alloc(uint64(i)))
			}
		},
		replace: func(i int, v uint64) {
			k := uint64(i)
			h.FreeRef(m[k])
			m[k] = h.Ref(h.alloc(v))
		},
		done: func() error {
			for _, r := range m {
				h.FreeRef(r)
			}
			m = nil
			return h.done()
		},
	}, nil
}
