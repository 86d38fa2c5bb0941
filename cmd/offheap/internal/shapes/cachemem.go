package shapes

import (
	"fmt"
	"runtime/debug"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

func init() {
	kvShape(bench.Spec{
		Name: "cache-mem",
		Doc: "a cache's memory, read from the process's RSS: fill, 1M entries of 16 B keys and 64 B values in an " +
			"ample budget, then the bytes per entry beyond key and value; churn, 4x a 64 MiB budget (-long 1 GiB) of Sets " +
			"of 64-1024 B values over twice the keys it holds, sizes changing, RSS over the budget sampled every " +
			"1/16 of it, then 90% of the keys deleted and resident over live read",
		Work:  bench.FixedTotal,
		Order: 124,
		Unit:  "set",
		Subs: []bench.Sub{
			{Name: "phase=fill", Param: false},
			{Name: "phase=churn", Param: true},
		},
		Workers:   []int{1},
		Runs:      1,
		FixedSize: true,
		Metrics: []bench.Metric{
			{Name: metricPerEntry, Doc: "resident bytes per entry beyond its key and value, at the end of the fill"},
			{Name: metricKept, Doc: "entries the cache still holds at the end of the fill or the churn, in percent of the Sets' keys", HigherIsBetter: true},
			{Name: metricRSSMax, Doc: "the largest RSS growth over the budget sampled during the churn"},
			{Name: metricResLive, Doc: "after deleting 90% of the keys: RSS growth over the key and value bytes still held"},
			{Name: metricHeapLive, Doc: "the same, counting only the resident bytes of the cache's own heap (offheap-kv): res/live-del " +
				"less what the process adds (the heap's metadata, the Go runtime's growth)"},
		},
		Verdicts: memVerdicts,
	}, runMem, func(a kvarms.Arm) bool { return a.Name != "nocache" })
}

// The cache-mem shape's columns.
const (
	metricPerEntry = "B/entry"
	metricKept     = "kept-pct"
	metricRSSMax   = "rss/max"
	metricResLive  = "res/live-del"
	metricHeapLive = "heap/live-del"
)

const (
	memKey   = 16
	memValue = 64
	memMin   = 64   // the churn's smallest value
	memMax   = 1024 // and largest
)

// memProbe reads the RSS growth a cache caused since it was made, taking
// an arm's own count of the memory it maps where that is larger
// (fastcache's chunks, resident from an earlier instance).
type memProbe struct {
	base uint64
	c    kvarms.Cache
}

func newMemProbe() *memProbe {
	debug.FreeOSMemory()
	return &memProbe{base: bench.RSS()}
}

func (p *memProbe) grown() float64 {
	rss := bench.RSS()
	n := rss - min(rss, p.base)
	if m, ok := p.c.(kvarms.Mapped); ok {
		n = max(n, m.MappedBytes())
	}
	return float64(n)
}

func runMem(t *bench.Trial, arm kvarms.Arm) (bench.Sample, error) {
	if t.Sub.Param.(bool) {
		return runMemChurn(t, arm)
	}
	n := t.Size(1<<20, 1<<20)
	ks := memoKeys(n, keyHex16)
	p := newMemProbe()
	c, err := newKV(arm, kvarms.Options{MaxBytes: max(256<<20, 4*n*(memKey+memValue)), Entries: n, EntryBytes: memKey + memValue})
	if err != nil {
		return bench.Sample{}, err
	}
	defer c.Close()
	p.c = c
	el := bench.Parallel(1, func(int) {
		c, ks := c, ks
		for i := range n {
			c.Set(ks.key(i), value(i, memValue))
		}
	})
	kvarms.Settle(c)
	kept, _ := countKept(c, ks, n, func(int) int { return memValue })
	debug.FreeOSMemory()
	m := map[string]float64{metricKept: 100 * float64(kept) / float64(n)}
	if kept > 0 {
		m[metricPerEntry] = p.grown()/float64(kept) - memKey - memValue
	}
	return bench.Sample{Ops: int64(n), Elapsed: el, Metrics: m}, nil
}

// countKept Gets every key of ks below n and returns how many the cache
// holds and their key and value bytes; size gives key i's value size, to
// check what came back.
func countKept(c kvarms.Cache, ks *keySet, n int, size func(i int) int) (kept int, live int64) {
	dst := make([]byte, 0, memMax)
	for i := range n {
		var ok bool
		if dst, ok = c.Get(dst[:0], ks.key(i)); ok && len(dst) == size(i) {
			kept++
			live += int64(ks.size + len(dst))
		}
	}
	return kept, live
}

// churnSize is the size of key i's value in round r: 64-1024 B, a new
// size each round.
func churnSize(i, r int) int {
	h := uint64(i)*0x9E3779B97F4A7C15 + uint64(r)*0xBF58476D1CE4E5B9
	return memMin + int((h>>33)%(memMax-memMin+1))
}

func runMemChurn(t *bench.Trial, arm kvarms.Arm) (bench.Sample, error) {
	maxBytes := max(t.Size(64<<20, 1<<30), 1<<20)
	mean := memKey + (memMin+memMax)/2
	n := 2 * maxBytes / mean // keys: twice what the budget holds
	ks := memoKeys(n, keyHex16)
	p := newMemProbe()
	c, err := newKV(arm, kvarms.Options{MaxBytes: maxBytes, Entries: maxBytes / mean, EntryBytes: mean})
	if err != nil {
		return bench.Sample{}, err
	}
	defer c.Close()
	p.c = c
	sets := 4 * maxBytes / mean
	every := max(sets/64, 1) // 64 samples: one per 1/16 of the budget written
	worst := 0.0
	round := func(i int) int { return i / n }
	el := bench.Parallel(1, func(int) {
		c, ks := c, ks
		for i := range sets {
			k := i % n
			c.Set(ks.key(k), value(k, churnSize(k, round(i))))
			if i%every == every-1 {
				worst = max(worst, p.grown()/float64(maxBytes))
			}
		}
	})
	t.Note("churned; deleting 90% of the keys")
	kvarms.Settle(c)
	last := func(k int) int { // the round of key k's last Set
		r := (sets - 1) / n
		if k > (sets-1)%n {
			r--
		}
		return r
	}
	kept, _ := countKept(c, ks, n, func(k int) int { return churnSize(k, last(k)) })
	for k := range n {
		if k%10 != 0 {
			c.Delete(ks.key(k))
		}
	}
	kvarms.Settle(c)
	_, live := countKept(c, ks, n, func(k int) int { return churnSize(k, last(k)) })
	debug.FreeOSMemory()
	m := map[string]float64{metricRSSMax: worst, metricKept: 100 * float64(kept) / float64(n)}
	if live > 0 {
		m[metricResLive] = p.grown() / float64(live)
		if h, ok := c.(interface{ Heap() *offheap.Heap }); ok {
			if res, err := h.Heap().ResidentBytes(); err == nil {
				m[metricHeapLive] = float64(res) / float64(live)
			}
		}
	}
	return bench.Sample{Ops: int64(sets), Elapsed: el, Metrics: m}, nil
}

// memVerdicts judges offheap-kv's memory: bytes per entry, RSS over the
// budget, resident over live after the deletes; each with the best peer's
// figure beside it.
func memVerdicts(r *bench.Report) []bench.Verdict {
	return []bench.Verdict{
		memVerdict(r, "phase=fill", "mem-per-entry", "resident bytes per entry beyond key and value, 1M entries",
			metricPerEntry, 24, "<= 24 B"),
		memVerdict(r, "phase=churn", "mem-rss-max", "RSS growth over MaxBytes, the largest sample of the churn",
			metricRSSMax, 1.05, "<= 1.05"),
		memVerdict(r, "phase=churn", "mem-delete", "resident over live after deleting 90% of the entries",
			metricResLive, 1.3, "<= 1.30"),
	}
}

func memVerdict(r *bench.Report, sub, name, figure, metric string, limit float64, target string) bench.Verdict {
	ours, why := find(r, "cache-mem", sub, "offheap-kv", 1)
	if ours == nil {
		return bench.Skip(name, figure, target, why)
	}
	v, ok := ours.Metrics[metric]
	if !ok {
		return bench.Skip(name, figure, target, "offheap-kv kept nothing")
	}
	measured := bench.Num(v)
	var best *bench.Summary
	for _, a := range kvarms.All() {
		s := r.Find("cache-mem", sub, a.Name, 1)
		if !a.Peer || s == nil {
			continue
		}
		if x, has := s.Metrics[metric]; has && (best == nil || x < best.Metrics[metric]) {
			best = s
		}
	}
	if best != nil {
		measured += fmt.Sprintf(" (best peer %s %s)", best.Row, bench.Num(best.Metrics[metric]))
	}
	return bench.Verdict{Name: name, Figure: figure, Target: target, Value: v, Pass: v <= limit, Measured: measured}
}
