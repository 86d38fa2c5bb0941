package shapes

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// The offheap-defrag way of the memory shapes (frag, drift): the default
// heap, with the defragmentation rule of docs/storing-values.md ("When to
// run a pass") applied as a cache applies it. Every defragEvery operations
// the shape reads the heap's Stats; when the free memory the heap holds
// (its spans' free blocks, its magazines' and depots') passes what the
// last Trim left in the spans (less what its pass gave back) by
// defragShare of the bytes the shape holds live (half), it Trims, so that
// the cached free blocks go back to their spans, and asks what a pass
// would give back (Heap.RelocateGain). What a Trim leaves that no pass
// takes does not bring on the next Trim: only new free memory does. A class is worth its moves when the spans they would
// empty hold at least defragPerMove blocks of the class for each block
// moved, and a pass runs when the worth classes would give back more than
// defragShare/2 of the live bytes; it offers RelocateAll only the values
// of those classes, defragBatch at a time. The way reports the thread CPU
// time of the rule (its Stats, Trims and passes) as a share of the thread
// CPU time of the whole workload, and the Trims' part of it.

// The rule's parameters (docs/storing-values.md gives their measure).
const (
	defragEvery    = 8192 // operations between two looks at the heap
	defragShare    = 0.50 // a Trim when the free memory held passes this share of the live bytes
	defragPerMove  = 2    // a class's gain per move, in its blocks, for its values to be offered
	defragBatch    = 1000 // values offered to one RelocateAll call
	defragMaxBlock = 64 << 10
)

// The metrics the way adds to its shapes.
const (
	defragCPU    = "defrag-cpu-pct"
	defragTrim   = "trim-cpu-pct"
	defragPasses = "passes"
	defragMoved  = "defrag-moved"
	defragWork   = "work-ms"
)

// defragMetrics are the columns of the offheap-defrag way.
var defragMetrics = []bench.Metric{
	{Name: defragCPU, Doc: "offheap-defrag: the thread CPU time of its rule (Stats, Trims, RelocateGain, passes), % of the workload's", Label: "defrag CPU, % of the workload", Target: 2},
	{Name: defragTrim, Doc: "offheap-defrag: the Trims' part of defrag-cpu-pct (emptying the magazines, releasing free pages)"},
	{Name: defragPasses, Doc: "offheap-defrag: Relocate passes the rule ran"},
	{Name: defragMoved, Doc: "offheap-defrag: blocks its passes moved"},
	{Name: defragWork, Doc: "offheap-defrag: the workload's thread CPU time, its rule's included, in ms"},
}

// defragWay is the memory shapes' offheap-defrag way, running run over a
// defragHeap on a thread of its own, so that its thread CPU time is the
// workload's.
func defragWay(run func(t *bench.Trial, a bench.Allocator) (bench.Sample, error)) bench.Way {
	return bench.Way{Name: "offheap-defrag", Doc: "the offheap way's heap with the defragmentation rule of docs/storing-values.md: " +
		"a Relocate pass of the classes worth it when RelocateGain passes a share of the live bytes", Run: func(t *bench.Trial) (bench.Sample, error) {
		h, err := offheap.NewHeap(offheap.Options{})
		if err != nil {
			return bench.Sample{}, err
		}
		defer h.Close()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		d := &defragHeap{h: h}
		s, err := run(t, d)
		if st := h.Stats(); err == nil && (st.Allocs != uint64(s.Allocs) || st.InUseBytes != 0) {
			err = fmt.Errorf("census: the heap counted %d allocations, the shape made %d; %d bytes still in use", st.Allocs, s.Allocs, st.InUseBytes)
		}
		return s, err
	}}
}

// defragHeap is a heap whose shape calls tick after each operation, with
// the values it holds, so that the rule can move them.
type defragHeap struct {
	h      *offheap.Heap
	ops    int
	cpu    time.Duration // the rule's thread CPU time
	trim   time.Duration // its Trims' part
	work   time.Duration // the workload's, between start and stop
	began  time.Duration
	passes int
	kept   uint64 // the free bytes the spans held after the last Trim, less what its pass gave back
	moved  int
	worth  [defragMaxBlock>>3 + 1]bool // by (n+7)>>3: the classes a pass offers
	batch  [][]byte
	idx    []int
}

func (d *defragHeap) Alloc(n int) []byte             { return d.h.Alloc(n) }
func (d *defragHeap) Free(b []byte)                  { d.h.Free(b) }
func (d *defragHeap) ResidentBytes() (uint64, error) { return d.h.ResidentBytes() }
func (d *defragHeap) Trim()                          { d.h.Trim() }

// start and stop bracket the workload's timed phases, its ticks included;
// on a nil defragHeap (another way's run) they do nothing.
func (d *defragHeap) start() {
	if d != nil {
		d.began = threadCPU()
	}
}

func (d *defragHeap) stop() {
	if d != nil {
		d.work += threadCPU() - d.began
	}
}

// threadCPU is bench.ThreadCPU, 0 where the system cannot say.
func threadCPU() time.Duration {
	t, _ := bench.ThreadCPU()
	return t
}

// tick counts an operation; every defragEvery it applies the rule, with
// live the bytes the shape holds and sets its values (nil for a hole),
// which a pass replaces in place.
func (d *defragHeap) tick(live int64, sets ...[][]byte) {
	if d.ops++; d.ops < defragEvery {
		return
	}
	d.ops = 0
	t0 := threadCPU()
	defer func() { d.cpu += threadCPU() - t0 }()
	st := d.h.Stats()
	if held := st.SpanFreeBytes + st.MagazineBytes + st.DepotBytes; float64(held) < float64(d.kept)+defragShare*float64(live) {
		return
	}
	t1 := threadCPU()
	d.h.Trim() // the magazines' and depots' free blocks back to their spans: RelocateGain counts them free then
	d.trim += threadCPU() - t1
	d.kept = d.h.Stats().SpanFreeBytes
	clear(d.worth[:])
	var gain uint64
	for _, c := range d.h.RelocateGain().Class {
		if c.Size > defragMaxBlock || c.Bytes < defragPerMove*c.Moves*uint64(c.Size) {
			continue
		}
		gain += c.Bytes
		for k := (c.Min + 7) >> 3; k <= (c.Size+7)>>3; k++ {
			d.worth[k] = true
		}
	}
	if float64(gain) < defragShare/2*float64(live) {
		return
	}
	d.kept -= min(d.kept, gain) // what the pass leaves
	d.passes++
	for _, set := range sets {
		d.pass(set)
	}
}

// pass offers RelocateAll the values of set of the worth classes and
// stores what it returns.
func (d *defragHeap) pass(set [][]byte) {
	flush := func() {
		if n := d.h.RelocateAll(d.batch); n > 0 {
			d.moved += n
			for j, i := range d.idx {
				set[i] = d.batch[j]
			}
		}
		d.batch, d.idx = d.batch[:0], d.idx[:0]
	}
	for i, b := range set {
		if n := cap(b); n > 0 && n <= defragMaxBlock && d.worth[(n+7)>>3] {
			d.batch = append(d.batch, b)
			d.idx = append(d.idx, i)
			if len(d.batch) == defragBatch {
				flush()
			}
		}
	}
	flush()
	clear(d.batch[:cap(d.batch)]) // no slice of the heap kept past the pass
}

// record sets the way's metrics in m.
func (d *defragHeap) record(m map[string]float64) {
	if d.work > 0 {
		m[defragCPU] = 100 * float64(d.cpu) / float64(d.work)
		m[defragTrim] = 100 * float64(d.trim) / float64(d.work)
	}
	m[defragPasses] = float64(d.passes)
	m[defragMoved] = float64(d.moved)
	m[defragWork] = float64(d.work.Microseconds()) / 1000
}

// defragVerdicts judges the offheap-defrag way of shape against the
// defragmentation rule's target: the worst of the resident / live metrics
// at most 1.3, for at most 2% of the workload's CPU time. Where the shape
// measured moveNs, the least work a move does (0 where it did not), the
// CPU verdict also gives the rule's floor: the blocks the rule moved, at
// moveNs each and nothing else, as a share of the workload's CPU time
// with that floor in place of the rule's own.
func defragVerdicts(r *bench.Report, shape string, moveNs float64, resident ...string) []bench.Verdict {
	s, why := find(r, shape, "", "offheap-defrag", 1)
	name, figure := shape+"-defrag", shape+", offheap-defrag: the worst resident / live ("+strings.Join(resident, ", ")+")"
	cname, cfigure := shape+"-defrag-cpu", shape+", offheap-defrag: the rule's CPU time, % of the workload's"
	if s == nil {
		return []bench.Verdict{bench.Skip(name, figure, "<= 1.30", why), bench.Skip(cname, cfigure, "<= 2%", why)}
	}
	worst := 0.0
	for _, k := range resident {
		worst = max(worst, s.Metrics[k])
	}
	vs := []bench.Verdict{{Name: name, Figure: figure, Target: "<= 1.30", Value: worst, Pass: worst > 0 && worst <= 1.3,
		Measured: fmt.Sprintf("%.2f (medians of %d runs)", worst, s.Runs)}}
	c, ok := s.Metrics[defragCPU]
	if !ok {
		return append(vs, bench.Skip(cname, cfigure, "<= 2%", "not measured (no thread CPU clock)"))
	}
	floor := ""
	if work := s.Metrics[defragWork] * 1e6; moveNs > 0 && work > 0 {
		least := moveNs * s.Metrics[defragMoved]
		floor = fmt.Sprintf("; its floor, the moves' copies alone, %.1f%%", 100*least/(work*(1-c/100)+least))
	}
	return append(vs, bench.Verdict{Name: cname, Figure: cfigure, Target: "<= 2%", Value: c, Pass: c <= 2,
		Measured: fmt.Sprintf("%.1f%% (Trim %.1f%%; %.0f passes, %.0f blocks moved%s; medians of %d runs)",
			c, s.Metrics[defragTrim], s.Metrics[defragPasses], s.Metrics[defragMoved], floor, s.Runs)})
}
