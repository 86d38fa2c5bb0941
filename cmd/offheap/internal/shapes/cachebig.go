package shapes

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

func init() {
	kvShape(bench.Spec{
		Name: "cache-big",
		Doc: "a big cache under churn: 2M entries (-long 10M) of 16 B keys and 64-256 B values filled into a budget " +
			"of 200 B an entry, then GOMAXPROCS goroutines make 90% Gets and 10% Sets of new sizes over 1.25x the " +
			"keys, so that entries are evicted, the loop itself allocating nothing: the collector's CPU share, Get latency, Go heap " +
			"growth, the memory attributable to the cache over the budget and bytes per entry beyond key and value",
		Work:      bench.FixedTotal,
		Order:     126,
		Unit:      "op",
		Workers:   []int{runtime.GOMAXPROCS(0)},
		Runs:      1,
		FixedSize: true,
		Metrics: []bench.Metric{
			{Name: gcCPU, Doc: "GC CPU share, % of all CPU time during the churn"},
			{Name: "gc-cycles", Doc: "garbage collections during the churn"},
			{Name: metricP99, Doc: "99th percentile of a Get during the churn (one Get in 16 timed), in ns"},
			{Name: metricP999, Doc: "99.9th percentile of a Get during the churn (one Get in 16 timed), in ns"},
			{Name: metricGoHeap, Doc: "the Go heap's growth from before the cache was made to after the churn, in MiB"},
			{Name: metricAttrMax, Doc: "the largest memory attributable to the cache over the budget sampled during the churn: for an " +
				"arm on an offheap Heap, the heap's resident bytes plus the Go heap's growth since the cache was made; " +
				"for the others the process's RSS growth"},
			{Name: metricPerEntry, Doc: "resident bytes per entry beyond its key and value, at the end of the fill"},
		},
		Verdicts: bigCacheVerdicts,
	}, runBigCache, func(a kvarms.Arm) bool { return a.Name != "nocache" })
}

// The cache-big shape's own columns.
const (
	metricP99    = "get-p99-ns"
	metricP999   = "get-p999-ns"
	metricGoHeap = "goheap-mib"
	// metricAttrMax is what the cache holds over the budget: for an arm on
	// an offheap Heap, counted (its resident pages and the Go heap's
	// growth), since the process's RSS also holds what other code left.
	metricAttrMax = "attr/max"
)

const (
	bigcMin, bigcMax = 64, 256
	bigcEntry        = 200 // budget bytes per entry
	bigcTimeEvery    = 16  // one Get in bigcTimeEvery is timed
)

// bigValueSize is the size of key k's value as Set number s makes it.
func bigValueSize(k, s int) int {
	h := uint64(k)*0x9E3779B97F4A7C15 ^ uint64(s)*0xBF58476D1CE4E5B9
	return bigcMin + int((h>>29)%(bigcMax-bigcMin+1))
}

// goHeapObjects is the bytes of live and not yet swept objects.
func goHeapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func runBigCache(t *bench.Trial, arm kvarms.Arm) (bench.Sample, error) {
	n := t.Size(2_000_000, 10_000_000)
	keys := n + n/4
	ops := t.Size(4_000_000, 20_000_000)
	ks := memoKeys(keys, keyHex16)
	trace := memoTrace(fmt.Sprint("big", keys), func() []uint32 { return uniformTrace(keys, traceLen, 11) })
	maxBytes := max(n*bigcEntry, 1<<20)
	nw := t.Workers
	ws := kvWorkers(nw, bigcMax)
	for w := range ws {
		ws[w].lat = make([]int64, 0, ops/nw/bigcTimeEvery+1)
	}
	p := newMemProbe()
	runtime.GC()
	heap0 := goHeapObjects()
	c, err := newKV(arm, kvarms.Options{MaxBytes: maxBytes, Entries: n, EntryBytes: 16 + (bigcMin+bigcMax)/2})
	if err != nil {
		return bench.Sample{}, err
	}
	defer c.Close()
	p.c = c
	last := time.Now()
	for i := range n {
		c.Set(ks.key(i), value(i, bigValueSize(i, 0)))
		if i&(1<<16-1) == 0 && time.Since(last) > time.Second {
			t.Note(fmt.Sprintf("filled %d of %d entries", i, n))
			last = time.Now()
		}
	}
	kvarms.Settle(c)
	kept, live := 0, int64(0)
	dst := make([]byte, 0, bigcMax)
	for i := range n {
		var ok bool
		if dst, ok = c.Get(dst[:0], ks.key(i)); ok {
			kept++
			live += int64(ks.size + len(dst))
		}
	}
	debug.FreeOSMemory()
	m := map[string]float64{}
	if kept > 0 {
		m[metricPerEntry] = (p.grown() - float64(live)) / float64(kept)
	}
	t.Note("filled; churning")
	attributable := func() float64 {
		h, ok := c.(interface{ Heap() *offheap.Heap })
		if !ok {
			return p.grown()
		}
		res, _ := h.Heap().ResidentBytes()
		return float64(int64(res) + max(0, int64(goHeapObjects())-int64(heap0)))
	}
	var worst float64
	runtime.GC()
	before := readGCMetrics()
	el := bench.Parallel(nw, func(w int) {
		st := &ws[w]
		c, ks, trace := c, ks, trace // hoisted
		dst, lat := st.dst, st.lat
		my := bench.Split(ops, nw, w)
		at := w * (len(trace) / nw)
		mask := len(trace) - 1
		var hits, gets int64
		for j := range my {
			// Nothing here allocates, for every arm alike: the
			// collector's cycles come from the arm alone.
			k := int(trace[(at+j)&mask])
			if j%10 == 9 {
				c.Set(ks.key(k), value(k, bigValueSize(k, j)))
				continue
			}
			gets++
			if gets%bigcTimeEvery != 0 {
				var ok bool
				if dst, ok = c.Get(dst[:0], ks.key(k)); ok {
					hits++
				}
				continue
			}
			t0 := time.Now()
			var ok bool
			dst, ok = c.Get(dst[:0], ks.key(k))
			lat = append(lat, int64(time.Since(t0)))
			if ok {
				hits++
			}
			if w == 0 && len(lat)%4096 == 0 {
				worst = max(worst, attributable()/float64(maxBytes))
			}
		}
		st.dst, st.lat, st.hits, st.gets = dst, lat, hits, gets
	})
	after := readGCMetrics()
	worst = max(worst, attributable()/float64(maxBytes))
	// The collector's CPU time over all the CPU time the runtime counted:
	// it adds to both only as a cycle ends, so a churn in which no cycle
	// ends has a share of 0, which its cycle count shows.
	if d := after.total - before.total; d > 0 {
		m[gcCPU] = 100 * (after.gc - before.gc) / d
	} else {
		m[gcCPU] = 0
	}
	m["gc-cycles"] = after.cycles - before.cycles
	var all []int64
	for w := range ws {
		all = append(all, ws[w].lat...)
	}
	slices.Sort(all)
	if len(all) > 0 {
		m[metricP99] = float64(all[len(all)*99/100])
		m[metricP999] = float64(all[len(all)*999/1000])
	}
	runtime.GC()
	m[metricGoHeap] = float64(int64(goHeapObjects())-int64(heap0)) / (1 << 20)
	runtime.KeepAlive(ws) // heap0 counts the workers' buffers: they stay live until here
	m[metricAttrMax] = worst
	return bench.Sample{Ops: int64(ops), Elapsed: el, Metrics: m}, nil
}

// bigCacheVerdicts judges offheap-kv in the big cache: the collector's
// share of the CPU, the Go heap it adds, and its Get p999 against the best
// Go-heap peer's.
func bigCacheVerdicts(r *bench.Report) []bench.Verdict {
	const shape = "cache-big"
	info := r.Shape(shape)
	if info == nil || len(info.Workers) == 0 {
		return nil
	}
	w := info.Workers[0]
	ours, why := find(r, shape, "", "offheap-kv", w)
	if ours == nil {
		return []bench.Verdict{bench.Skip("big-gc", "big cache: GC CPU share", "<= 0.1%", why)}
	}
	v := func(name, figure, metric, target string, limit float64) bench.Verdict {
		x, ok := ours.Metrics[metric]
		if !ok {
			return bench.Skip(name, figure, target, "not measured")
		}
		return bench.Verdict{Name: name, Figure: figure, Target: target, Value: x, Pass: x <= limit,
			Measured: bench.Num(x)}
	}
	vs := []bench.Verdict{
		v("big-gc", "big cache: GC CPU share during the churn, %", gcCPU, "<= 0.1", 0.1),
		v("big-goheap", "big cache: Go heap growth, MiB", metricGoHeap, "< 1", 1),
		v("big-rss-max", "big cache: memory attributable to the cache over MaxBytes, largest sample", metricAttrMax,
			"<= 1.05", 1.05),
	}
	const p999 = "big cache: Get p999, offheap-kv / the best Go-heap peer's"
	var best *bench.Summary
	for _, a := range kvarms.All() {
		if s := r.Find(shape, "", a.Name, w); a.GoHeap && a.Peer && s != nil && s.Metrics[metricP999] > 0 &&
			(best == nil || s.Metrics[metricP999] < best.Metrics[metricP999]) {
			best = s
		}
	}
	if best == nil || ours.Metrics[metricP999] <= 0 {
		return append(vs, bench.Skip("big-p999", p999, "<= 0.50x", "no Go-heap peer measured"))
	}
	x := ours.Metrics[metricP999] / best.Metrics[metricP999]
	return append(vs, bench.Verdict{Name: "big-p999", Figure: p999, Target: "<= 0.50x", Value: x, Pass: x <= 0.5,
		Measured: fmt.Sprintf("%.2fx (%s vs %s %s ns)", x, bench.Num(ours.Metrics[metricP999]), best.Row,
			bench.Num(best.Metrics[metricP999]))})
}
