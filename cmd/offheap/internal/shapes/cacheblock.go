package shapes

import (
	"fmt"
	"runtime"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

func init() {
	kvShape(bench.Spec{
		Name: "cache-block",
		Doc: "a block cache: GOMAXPROCS goroutines read 8K blocks of 4-64 KiB (16 B keys) through a 128 MiB cache " +
			"(-long 32K blocks, 512 MiB), the working set 2.2x the budget, Zipf(0.99) by block; a miss Sets the block; " +
			"timed after 4 reads a block to warm up",
		Work:      bench.FixedTotal,
		Order:     121,
		Unit:      "read",
		Workers:   []int{runtime.GOMAXPROCS(0)},
		Runs:      3,
		FixedSize: true,
		Metrics:   []bench.Metric{{Name: metricHit, Doc: "Gets that found their key, in percent", HigherIsBetter: true}},
		Verdicts: func(r *bench.Report) []bench.Verdict {
			return []bench.Verdict{kvThroughput(r, "cache-block", "", "cache-block",
				"throughput, block cache reads: offheap-kv / the best peer", "", 1.0)}
		},
	}, runBlock, func(a kvarms.Arm) bool { return a.Evicts || a.Name == "floor" })
}

const (
	blockMin = 4 << 10
	blockMax = 64<<10 - 64 // fastcache takes no entry of 64 KiB or more
)

// blockSize is block k's size.
func blockSize(k int) int {
	return blockMin + int((uint64(k)*0x9E3779B97F4A7C15>>33)%(blockMax-blockMin+1))
}

func runBlock(t *bench.Trial, arm kvarms.Arm) (bench.Sample, error) {
	n := t.Size(8<<10, 32<<10)
	maxBytes := max(t.Size(128<<20, 512<<20), 64<<20)
	ops := t.Size(100_000, 1_000_000)
	ks := memoKeys(n, keyHex16)
	trace := memoTrace(fmt.Sprint("block", n), func() []uint32 { return zipfTrace(n, traceLen, 0.99, 13) })
	blocks := memoBlocks()
	mean := (blockMin + blockMax) / 2
	c, err := newKV(arm, kvarms.Options{MaxBytes: maxBytes, Entries: maxBytes / mean, EntryBytes: mean})
	if err != nil {
		return bench.Sample{}, err
	}
	defer c.Close()
	// Warm up untimed, from the end of the trace, so that the timed reads
	// see the cache in its steady state, not its first fill.
	dst := make([]byte, 0, blockMax)
	for j := range 4 * n {
		k := int(trace[len(trace)-1-j%len(trace)])
		var ok bool
		if dst, ok = c.Get(dst[:0], ks.key(k)); !ok {
			off := k * 64 % (len(blocks) - blockMax)
			c.Set(ks.key(k), blocks[off:off+blockSize(k)])
		}
	}
	kvarms.Settle(c)
	nw := t.Workers
	ws := kvWorkers(nw, blockMax)
	el := bench.Parallel(nw, func(w int) {
		st := &ws[w]
		c, ks, trace, blocks := c, ks, trace, blocks // hoisted
		dst := st.dst
		my := bench.Split(ops, nw, w)
		at := w * (len(trace) / nw)
		mask := len(trace) - 1
		var hits int64
		for j := range my {
			k := int(trace[(at+j)&mask])
			var ok bool
			if dst, ok = c.Get(dst[:0], ks.key(k)); ok {
				hits++
				continue
			}
			off := k * 64 % (len(blocks) - blockMax)
			c.Set(ks.key(k), blocks[off:off+blockSize(k)])
		}
		st.dst, st.hits, st.gets = dst, hits, int64(my)
	})
	return bench.Sample{Ops: int64(ops), Elapsed: el, Metrics: map[string]float64{metricHit: hitPct(ws)}}, nil
}

// memoBlocks is the bytes blocks are cut from: 1 MiB of a pattern.
func memoBlocks() []byte {
	if b, ok := traceMemo.Load("blocks"); ok {
		return b.([]byte)
	}
	b := make([]byte, 1<<20)
	r := bench.NewRand(17)
	for i := range b {
		b[i] = byte(r.Next())
	}
	v, _ := traceMemo.LoadOrStore("blocks", b)
	return v.([]byte)
}
