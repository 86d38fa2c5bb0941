package shapes

import (
	"fmt"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

func init() {
	var subs []bench.Sub
	for _, tr := range []string{"zipf", "scan"} {
		for _, mb := range []int{32, 128} {
			subs = append(subs, bench.Sub{Name: fmt.Sprintf("trace=%s-%dMiB", tr, mb), Param: hitSub{tr == "scan", mb << 20}})
		}
	}
	kvShape(bench.Spec{
		Name: "cache-hit",
		Doc: "hit ratio: one goroutine reads through a cache (Get, and Set on a miss) 1M keys of 16 B with 1 KiB values, " +
			"2M requests (-long 1M keys, 8M), Zipf(0.99), and the same with a scan of 64K new keys every 256K " +
			"requests, at budgets of 32 and 128 MiB; the scans' own misses are not counted",
		Work:      bench.FixedTotal,
		Order:     122,
		Unit:      "request",
		Subs:      subs,
		Workers:   []int{1},
		Runs:      1,
		FixedSize: true,
		Metrics:   []bench.Metric{{Name: metricHit, Doc: "Gets that found their key, in percent", HigherIsBetter: true}},
		Plot:      []string{metricHit},
		Verdicts:  hitVerdicts,
	}, runHit, func(a kvarms.Arm) bool { return a.Evicts })
}

// hitSub is one trace at one budget.
type hitSub struct {
	scans    bool
	maxBytes int
}

const (
	hitValue      = 1 << 10
	hitScanEvery  = 1 << 18
	hitScanLength = 1 << 16
	// hitScanBit marks a scan's key in a trace: a key number past the
	// Zipf keys, never read again.
	hitScanBit = 1 << 31
)

func runHit(t *bench.Trial, arm kvarms.Arm) (bench.Sample, error) {
	p := t.Sub.Param.(hitSub)
	n := t.Size(1<<20, 1<<20)
	length := t.Size(2<<20, 8<<20)
	tr := memoTrace(fmt.Sprint("hit", n, length, p.scans), func() []uint32 { return hitTrace(n, length, p.scans) })
	ks := memoKeys(n, keyHex16)
	c, err := newKV(arm, kvarms.Options{MaxBytes: p.maxBytes, Entries: p.maxBytes / (16 + hitValue), EntryBytes: 16 + hitValue})
	if err != nil {
		return bench.Sample{}, err
	}
	defer c.Close()
	var hits, gets int64
	dst := make([]byte, 0, hitValue)
	scanKey := make([]byte, 16)
	el := bench.Parallel(1, func(int) {
		c, tr, ks := c, tr, ks // hoisted
		for i, x := range tr {
			if x&hitScanBit != 0 {
				k := fmt.Appendf(scanKey[:0], "scan%012x", x&^hitScanBit)
				if _, ok := c.Get(dst[:0], k); !ok {
					c.Set(k, value(int(x), hitValue))
				}
				continue
			}
			k := ks.key(int(x))
			var ok bool
			dst, ok = c.Get(dst[:0], k)
			gets++
			if ok {
				hits++
				continue
			}
			c.Set(k, value(int(x), hitValue))
			if i&(1<<18-1) == 0 {
				kvarms.Settle(c)
			}
		}
	})
	m := map[string]float64{metricHit: 100 * float64(hits) / float64(max(gets, 1))}
	return bench.Sample{Ops: int64(len(tr)), Elapsed: el, Metrics: m}, nil
}

// hitTrace is length requests for n keys, Zipf(0.99); with scans, every
// hitScanEvery requests give way to hitScanLength keys never seen before.
func hitTrace(n, length int, scans bool) []uint32 {
	tr := zipfTrace(n, length, 0.99, 9)
	if !scans {
		return tr
	}
	next := uint32(0)
	for at := hitScanEvery; at < length; at += hitScanEvery {
		for j := range min(hitScanLength, length-at) {
			tr[at+j] = hitScanBit | next
			next++
		}
	}
	return tr
}

// hitVerdicts judges offheap-kv's hit ratio on each trace and budget
// against the best peer's: at most a point below it.
func hitVerdicts(r *bench.Report) []bench.Verdict {
	var vs []bench.Verdict
	info := r.Shape("cache-hit")
	if info == nil {
		return nil
	}
	for _, sub := range info.Subs {
		name, figure, target := "hit-"+sub[len("trace="):], "hit ratio, "+sub+": offheap-kv minus the best peer", ">= -1.0 points"
		ours, why := find(r, "cache-hit", sub, "offheap-kv", 1)
		var best *bench.Summary
		for _, a := range kvarms.All() {
			if s := r.Find("cache-hit", sub, a.Name, 1); a.Peer && s != nil && (best == nil || s.Metrics[metricHit] > best.Metrics[metricHit]) {
				best = s
			}
		}
		if ours == nil || best == nil {
			vs = append(vs, bench.Skip(name, figure, target, missing(why, "no peer measured")))
			continue
		}
		d := ours.Metrics[metricHit] - best.Metrics[metricHit]
		vs = append(vs, bench.Verdict{Name: name, Figure: figure, Target: target, Value: d, Pass: d >= -1,
			Measured: fmt.Sprintf("%+.1f points (%.1f%% vs %s %.1f%%)", d, ours.Metrics[metricHit], best.Row, best.Metrics[metricHit])})
	}
	return vs
}
