package shapes

import (
	"fmt"
	"math/bits"
	"runtime"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

func init() {
	kvShape(bench.Spec{
		Name: "cache",
		Doc: "key-value caches on their authors' own benchmarks, all workers on one cache: fastcache's Set, Get and " +
			"SetGet (65,536 4-byte keys and values), bigcache's parallel Get (14-byte keys, 100-byte values, all hits), " +
			"phuslu/lru's mix (16-byte keys, 8-byte values, a cache of 128K entries half full, -long 1M; Zipf keys, " +
			"90% Get, 10% Set), each timed after the same loop has made two passes over the keys; rows: the arms of " +
			"the cache shapes (phuslu/lru itself: the module proxy does not serve it)",
		Work:  bench.FixedTotal,
		Quick: true,
		Order: 120,
		Unit:  "op",
		Subs: []bench.Sub{
			{Name: "op=set", Param: cacheSet},
			{Name: "op=get", Param: cacheGet},
			{Name: "op=setget", Param: cacheSetGet},
			{Name: "op=bigget", Param: cacheBigGet},
			{Name: "op=mixed", Param: cacheMixed},
		},
		// The peers' benchmarks run GOMAXPROCS goroutines (RunParallel).
		Workers: []int{runtime.GOMAXPROCS(0)},
		// A trial is tens of ms, with ten rows and five subs: three runs
		// keep the default run's length.
		Runs:      3,
		FixedSize: true,
		Metrics:   []bench.Metric{{Name: metricHit, Doc: "Gets that found their key, in percent", HigherIsBetter: true}},
		Verdicts:  cacheVerdicts,
	}, runCache, nil)
}

// metricHit is the cache shapes' hit ratio column.
const metricHit = "hit-pct"

// The cache shape's subs.
type cacheOp int

const (
	cacheSet cacheOp = iota
	cacheGet
	cacheSetGet
	cacheBigGet
	cacheMixed
)

const (
	fastKeys    = 1 << 16 // fastcache's items
	bigGetKeys  = 1 << 17
	bigGetValue = 100
	traceLen    = 1 << 20 // a shared trace's length; workers start apart and wrap
	setGetBatch = 1024    // SetGet sets a batch of keys, then gets them
)

func runCache(t *bench.Trial, arm kvarms.Arm) (bench.Sample, error) {
	op := t.Sub.Param.(cacheOp)
	ops := t.Size(1<<18, 1<<22)
	var (
		keys  *keySet
		trace []uint32
		vsize int
		o     kvarms.Options
	)
	// The key counts shrink with -scale (to a power of two, for the
	// loops' masks), so that a smoke run fills little.
	switch op {
	case cacheSet, cacheGet, cacheSetGet:
		n := pow2(t.Size(fastKeys, fastKeys))
		keys, vsize = memoKeys(n, keyLE4), 4
		o = kvarms.Options{MaxBytes: 32 << 20, Entries: n, EntryBytes: 8}
	case cacheBigGet:
		n := pow2(t.Size(bigGetKeys, bigGetKeys))
		keys, vsize = memoKeys(n, keyPrefix), bigGetValue
		trace = memoTrace(fmt.Sprint("bigget", n), func() []uint32 { return doubled(uniformTrace(n, traceLen, 1)) })
		o = kvarms.Options{MaxBytes: 64 << 20, Entries: n, EntryBytes: 14 + bigGetValue}
	case cacheMixed:
		n := pow2(t.Size(1<<17, 1<<20))
		keys, vsize = memoKeys(n, keyPad16), 8
		trace = memoTrace(fmt.Sprint("mixed", n), func() []uint32 { return mixedTrace(n) })
		o = kvarms.Options{MaxBytes: max(32<<20, 4*n*24), Entries: n, EntryBytes: 24}
	}
	c, err := newKV(arm, o)
	if err != nil {
		return bench.Sample{}, err
	}
	defer c.Close()
	n := len(keys.b) / keys.size
	switch op {
	case cacheGet, cacheSetGet, cacheBigGet:
		for i := range n {
			c.Set(keys.key(i), value(i, vsize))
		}
	case cacheMixed:
		for i := range n / 2 { // phuslu's: the cache half full
			c.Set(keys.key(i), value(i, vsize))
		}
	}
	kvarms.Settle(c)
	ws := kvWorkers(t.Workers, 256)
	nw := t.Workers
	loop := func(w, ops int) {
		st := &ws[w]
		c, keys, trace := c, keys, trace // hoisted: the loop reads locals
		dst := st.dst
		var hits, gets, sets int64
		my := bench.Split(ops, nw, w)
		at := w * (n / nw) // where this worker starts in the keys, or in the trace
		switch op {
		case cacheSet:
			for j := range my {
				k := keys.key((at + j) & (n - 1))
				c.Set(k, k)
			}
			sets = int64(my)
		case cacheGet:
			for j := range my {
				var ok bool
				dst, ok = c.Get(dst[:0], keys.key((at+j)&(n-1)))
				if ok {
					hits++
				}
			}
			gets = int64(my)
		case cacheSetGet:
			for j := 0; j < my; j += 2 * setGetBatch {
				base := at + j/2
				for q := range setGetBatch {
					k := keys.key((base + q) & (n - 1))
					c.Set(k, k)
				}
				for q := range setGetBatch {
					var ok bool
					dst, ok = c.Get(dst[:0], keys.key((base+q)&(n-1)))
					if ok {
						hits++
					}
				}
			}
			gets = int64((my + 2*setGetBatch - 1) / (2 * setGetBatch) * setGetBatch)
			sets = gets
		case cacheBigGet, cacheMixed:
			at = w * (len(trace) / nw)
			mask := len(trace) - 1
			for j := range my {
				x := trace[(at+j)&mask]
				k := keys.key(int(x >> 1))
				if x&1 != 0 {
					c.Set(k, value(int(x>>1), vsize))
					sets++
					continue
				}
				var ok bool
				dst, ok = c.Get(dst[:0], k)
				if ok {
					hits++
				}
				gets++
			}
		}
		st.hits, st.gets, st.sets, st.dst = hits, gets, sets, dst
	}
	// The peers' own benchmarks time b.N loops over their keys, a cache
	// past its first passes: the same loop runs untimed first, two passes
	// over the keys, so that the timed one does not measure the caches'
	// warming (a key's first reads write its policy state in some arms).
	bench.Parallel(nw, func(w int) { loop(w, min(ops, 4*n)) })
	el := bench.Parallel(nw, func(w int) { loop(w, ops) })
	var done int64
	for i := range ws {
		done += ws[i].gets + ws[i].sets
	}
	m := map[string]float64{}
	if op != cacheSet {
		m[metricHit] = hitPct(ws)
	}
	return bench.Sample{Ops: done, Elapsed: el, Metrics: m}, nil
}

// pow2 is the largest power of two at most n (n >= 1).
func pow2(n int) int { return 1 << (bits.Len(uint(n)) - 1) }

// memoKeys returns n keys in format, made once per process.
func memoKeys(n int, format string) *keySet {
	name := fmt.Sprint("keys/", format, "/", n)
	if ks, ok := traceMemo.Load(name); ok {
		return ks.(*keySet)
	}
	ks, _ := traceMemo.LoadOrStore(name, makeKeys(n, format))
	return ks.(*keySet)
}

// mixedTrace is phuslu/lru's mix over n keys: a key number drawn
// Zipf(1.0001) by rank, doubled, plus 1 for the one op in ten that is a Set.
// The bigget trace's numbers are doubled too, never with the Set bit.
func mixedTrace(n int) []uint32 {
	tr := zipfTrace(n, traceLen, 1.0001, 2)
	r := bench.NewRand(5)
	for i, x := range tr {
		tr[i] = x << 1
		if r.Intn(10) == 0 {
			tr[i] |= 1
		}
	}
	return tr
}

// doubled shifts every key number of tr up by one bit, the Set bit clear.
func doubled(tr []uint32) []uint32 {
	for i := range tr {
		tr[i] <<= 1
	}
	return tr
}

// cacheVerdicts judges offheap's cache on each sub of the cache shape:
// throughput at least the best peer's on the Get-heavy and mixed subs, and
// at least 0.8x fastcache's on Set. Each gives the floor's figure beside
// it: what the leanest cache reaches on the same loop.
func cacheVerdicts(r *bench.Report) []bench.Verdict {
	var vs []bench.Verdict
	for _, c := range []struct{ sub, what string }{
		{"op=get", "fastcache's Get"}, {"op=bigget", "bigcache's parallel Get"},
		{"op=setget", "fastcache's SetGet"}, {"op=mixed", "phuslu/lru's 90% Get, 10% Set"},
	} {
		vs = append(vs, kvThroughput(r, "cache", c.sub, "cache-"+c.sub[3:],
			"throughput, "+c.what+": offheap-kv / the best peer", "", 1.0))
	}
	return append(vs, kvThroughput(r, "cache", "op=set", "cache-set",
		"throughput, fastcache's Set: offheap-kv / fastcache", "fastcache", 0.8))
}

// kvThroughput judges offheap-kv's throughput on shape's sub over the
// peer's (the fastest peer when peer is ""), at the shape's worker count,
// against "at least limit".
func kvThroughput(r *bench.Report, shape, sub, name, figure, peer string, limit float64) bench.Verdict {
	target := fmt.Sprintf(">= %.2fx", limit)
	info := r.Shape(shape)
	if info == nil || len(info.Workers) == 0 {
		return bench.Skip(name, figure, target, shape+" not run")
	}
	w := info.Workers[0]
	ours, why := find(r, shape, sub, "offheap-kv", w)
	var best *bench.Summary
	for _, a := range kvarms.All() {
		if !a.Peer || peer != "" && a.Name != peer {
			continue
		}
		if s := r.Find(shape, sub, a.Name, w); s != nil && (best == nil || s.MinNs < best.MinNs) {
			best = s
		}
	}
	if ours == nil || best == nil {
		return bench.Skip(name, figure, target, missing(why, "no peer measured"))
	}
	v := best.MinNs / ours.MinNs
	measured := fmt.Sprintf("%.2fx (%s vs %s %s ns/op", v, bench.Num(ours.MinNs), best.Row, bench.Num(best.MinNs))
	if fl := r.Find(shape, sub, "floor", w); fl != nil {
		measured += fmt.Sprintf("; floor %s ns/op, %.2fx", bench.Num(fl.MinNs), best.MinNs/fl.MinNs)
	}
	return atLeast(bench.Verdict{Name: name, Figure: figure, Target: target, Value: v, Measured: measured + ")"},
		limit, ours, best)
}
