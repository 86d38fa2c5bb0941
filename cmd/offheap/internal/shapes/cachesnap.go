package shapes

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

func init() {
	kvShape(bench.Spec{
		Name: "cache-snapshot",
		Doc: "a snapshot to a file and back: 1M entries (-long 4M) of 16 B keys and 64-256 B values saved by the " +
			"cache's own SaveToFile into a temporary directory, then loaded into a new cache in a new process, as a " +
			"restart loads it, and again in this one; ns per entry, save and load together",
		Work:      bench.FixedTotal,
		Order:     128,
		Unit:      "entry",
		Workers:   []int{1},
		Runs:      3,
		FixedSize: true,
		Metrics: []bench.Metric{
			{Name: metricSave, Doc: "the save, in ms"},
			{Name: metricLoad, Doc: "the load in a new process, in ms: the file is in the page cache, the memory fresh"},
			{Name: metricLoadHere, Doc: "the load in this process, after the save, in ms: an arm that reuses memory its earlier caches faulted in (fastcache keeps its freed chunks for the next cache) writes to resident pages"},
			{Name: metricSaveCPU, Doc: "CPU time (user and system, all threads) the save took, in ms: the work, less the machine's other load than wall time"},
			{Name: metricLoadCPU, Doc: "CPU time the load in a new process took, in ms"},
			{Name: metricLoadFaults, Doc: "page faults the load in a new process took with no I/O, in thousands: fresh memory's first touches"},
			{Name: metricKept, Doc: "entries the cache still holds at the end of the fill or the churn, in percent of the Sets' keys", HigherIsBetter: true},
		},
		Verdicts: snapVerdicts,
	}, runSnapshot, func(a kvarms.Arm) bool { return a.Load != nil })
}

// The cache-snapshot shape's columns.
const (
	metricSave       = "save-ms"
	metricLoad       = "load-ms"
	metricSaveCPU    = "save-cpu-ms"
	metricLoadHere   = "load-here-ms"
	metricLoadCPU    = "load-cpu-ms"
	metricLoadFaults = "load-kfaults"
)

func runSnapshot(t *bench.Trial, arm kvarms.Arm) (bench.Sample, error) {
	n := t.Size(1<<20, 4<<20)
	ks := memoKeys(n, keyHex16)
	o := kvarms.Options{MaxBytes: max(64<<20, n*(16+bigcMax)*2), Entries: n, EntryBytes: 16 + (bigcMin+bigcMax)/2}
	c, err := newKV(arm, o)
	if err != nil {
		return bench.Sample{}, err
	}
	defer c.Close()
	for i := range n {
		c.Set(ks.key(i), value(i, bigValueSize(i, 0)))
	}
	dir, err := os.MkdirTemp("", "offheap-bench-snapshot-")
	if err != nil {
		return bench.Sample{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "snapshot")
	cpu0, _, _ := procUsage()
	t0 := time.Now()
	if err := c.(kvarms.Saver).SaveToFile(path); err != nil {
		return bench.Sample{}, fmt.Errorf("%s: SaveToFile: %w", arm.Name, err)
	}
	save := time.Since(t0)
	cpu1, _, usage := procUsage()
	fresh, err := loadInChild(snapLoad{Arm: arm.Name, Path: path, Options: o, N: n})
	if err != nil {
		return bench.Sample{}, fmt.Errorf("%s: loading the snapshot in a new process: %w", arm.Name, err)
	}
	t0 = time.Now()
	loaded, err := arm.Load(path, o)
	here := time.Since(t0)
	if err != nil {
		return bench.Sample{}, fmt.Errorf("%s: loading the snapshot: %w", arm.Name, err)
	}
	kept, _ := countKept(loaded, ks, n, func(i int) int { return bigValueSize(i, 0) })
	loaded.Close()
	if kept != fresh.Kept {
		return bench.Sample{}, fmt.Errorf("%s: the load in a new process kept %d entries, in this one %d", arm.Name, fresh.Kept, kept)
	}
	load := time.Duration(fresh.LoadNs)
	m := map[string]float64{
		metricSave:     float64(save.Microseconds()) / 1000,
		metricLoad:     float64(load.Microseconds()) / 1000,
		metricLoadHere: float64(here.Microseconds()) / 1000,
		metricKept:     100 * float64(kept) / float64(n),
	}
	if usage {
		m[metricSaveCPU] = float64((cpu1 - cpu0).Microseconds()) / 1000
	}
	if fresh.Usage {
		m[metricLoadCPU] = float64(time.Duration(fresh.CPUNs).Microseconds()) / 1000
		m[metricLoadFaults] = float64(fresh.Faults) / 1000
	}
	return bench.Sample{Ops: int64(n), Elapsed: save + load, Metrics: m}, nil
}

// snapVerdicts judges offheap-kv's save and load against fastcache's, each
// a median over the runs.
func snapVerdicts(r *bench.Report) []bench.Verdict {
	var vs []bench.Verdict
	for _, x := range []struct{ name, what, metric string }{{"snap-save", "save", metricSave}, {"snap-load", "load", metricLoad}} {
		figure := "snapshot " + x.what + " time, 1M entries: offheap-kv / fastcache"
		ours, why := find(r, "cache-snapshot", "", "offheap-kv", 1)
		fc, why2 := find(r, "cache-snapshot", "", "fastcache", 1)
		if ours == nil || fc == nil || fc.Metrics[x.metric] <= 0 {
			vs = append(vs, bench.Skip(x.name, figure, "<= 1.00x", missing(why, why2)))
			continue
		}
		v := ours.Metrics[x.metric] / fc.Metrics[x.metric]
		vs = append(vs, bench.Verdict{Name: x.name, Figure: figure, Target: "<= 1.00x", Value: v, Pass: v <= 1,
			Measured: fmt.Sprintf("%.2fx (%s vs %s ms)", v, bench.Num(ours.Metrics[x.metric]), bench.Num(fc.Metrics[x.metric]))})
	}
	return vs
}
