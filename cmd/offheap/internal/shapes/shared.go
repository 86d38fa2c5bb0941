package shapes

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterWayShape(bench.WayShape{
		Spec: bench.Spec{
			Name:     "shared",
			Doc:      "Shared Retain+Release pairs at 1 and GOMAXPROCS workers: static, plain and Hot handles",
			Work:     bench.FixedTotal,
			Quick:    true,
			Order:    110,
			Unit:     "pair",
			Workers:  sharedWorkers(),
			Verdicts: sharedVerdicts,
			Scaling:  1, // shared-hot's target, where GOMAXPROCS is 2
		},
		Ways: []bench.Way{
			{Name: "static", Doc: "a Static handle, which never writes", Run: sharedWay(sharedStaticHandles)},
			{Name: "plain-shared", Doc: "one plain handle every worker shares", Run: sharedWay(sharedOne())},
			{Name: "hot-shared", Doc: "one Hot handle every worker shares", Run: sharedWay(sharedOne(offheap.Hot()))},
			{Name: "own", Doc: "a plain handle per worker: the unshared control", Run: sharedWay(sharedOwn)},
		},
	})
}

// sharedWorkers is 1 and GOMAXPROCS, once each.
func sharedWorkers() []int {
	return slices.Compact([]int{1, runtime.GOMAXPROCS(0)})
}

// sharedLen is the size of every handle's bytes; the shape never reads them.
// It is large enough that the own way's handles, allocated one after the
// other, keep their counts more than two cache lines apart, so that the
// unshared control shares no line.
const sharedLen = 256

// sharedStatic is what the static way's handle points at.
var sharedStatic [sharedLen]byte

// sharedHandles makes the handles of one trial of a way: handles[w] is
// worker w's, and release lists the creators' references, released once the
// workers are done.
type sharedHandles func(h *offheap.Heap, workers int) (handles, release []offheap.Shared)

func sharedStaticHandles(_ *offheap.Heap, workers int) (handles, release []offheap.Shared) {
	s := offheap.StaticShared(sharedStatic[:])
	for range workers {
		handles = append(handles, s)
	}
	return handles, nil
}

// sharedOne makes one handle with opts that every worker shares.
func sharedOne(opts ...offheap.SharedOption) sharedHandles {
	return func(h *offheap.Heap, workers int) (handles, release []offheap.Shared) {
		s := h.NewShared(sharedLen, opts...)
		for range workers {
			handles = append(handles, s)
		}
		return handles, []offheap.Shared{s}
	}
}

func sharedOwn(h *offheap.Heap, workers int) (handles, release []offheap.Shared) {
	for range workers {
		handles = append(handles, h.NewShared(sharedLen))
	}
	return handles, handles
}

// sharedWay runs the shared shape with the handles that makeHandles makes,
// on a heap of the trial's own.
func sharedWay(makeHandles sharedHandles) func(t *bench.Trial) (bench.Sample, error) {
	return func(t *bench.Trial) (bench.Sample, error) { return runShared(t, makeHandles) }
}

func runShared(t *bench.Trial, makeHandles sharedHandles) (bench.Sample, error) {
	total := t.Size(8_000_000, 32_000_000)
	h, err := offheap.NewHeap(offheap.Options{ReleaseDelay: -1})
	if err != nil {
		return bench.Sample{}, err
	}
	handles, release := makeHandles(h, t.Workers)
	el := bench.Parallel(t.Workers, func(w int) {
		s := handles[w]
		for range bench.Split(total, t.Workers, w) {
			r := s.Retain()
			r.Release()
		}
	})
	for _, s := range release {
		if n := s.Refs(); n != 1 {
			h.Close()
			return bench.Sample{}, fmt.Errorf("%s: %d references after the workers' pairs, want 1", t.Row, n)
		}
		s.Release()
	}
	if st := h.Stats(); st.InUseBytes != 0 {
		h.Close()
		return bench.Sample{}, fmt.Errorf("census: %d bytes still in use after the last Release", st.InUseBytes)
	}
	if err := h.Close(); err != nil {
		return bench.Sample{}, err
	}
	return bench.Sample{Ops: int64(total), Elapsed: el}, nil
}

// sharedVerdicts judges a Hot handle's scaling (sharing it among every P
// must not be slower than one goroutine alone) and what a plain handle
// costs.
func sharedVerdicts(r *bench.Report) []bench.Verdict {
	var vs []bench.Verdict
	var ws []int
	for _, sh := range r.Shapes {
		if sh.Name == "shared" {
			ws = sh.Workers
		}
	}
	top := 1
	if len(ws) > 0 {
		top = slices.Max(ws)
	}

	name := "shared-hot"
	figure := fmt.Sprintf("Retain+Release, fixed total: time at %d workers / time at 1, one Hot handle shared by all", top)
	const target = "<= 1.00"
	one, why := find(r, "shared", "", "hot-shared", 1)
	at, why2 := find(r, "shared", "", "hot-shared", top)
	switch {
	case top == 1:
		vs = append(vs, bench.Skip(name, figure, target, "GOMAXPROCS is 1: nothing to share the handle with"))
	case one == nil || at == nil:
		vs = append(vs, bench.Skip(name, figure, target, missing(why, why2)))
	default:
		v := at.MinNs / one.MinNs
		m := fmt.Sprintf("%.2f (speedup %.2fx)", v, 1/v)
		if p1, pn := r.Find("shared", "", "plain-shared", 1), r.Find("shared", "", "plain-shared", top); p1 != nil && pn != nil {
			m += fmt.Sprintf(" (plain-shared %.2f)", pn.MinNs/p1.MinNs)
		}
		vs = append(vs, scalingAtMost(bench.Verdict{Name: name, Figure: figure, Target: target, Value: v, Measured: m},
			1, r, "shared", "", "own", top, one, at))
	}

	// A plain handle must cost what it cost before Hot handles existed; one
	// build cannot run the old code, so this compares the two plain ways,
	// which run the same code at one worker: a handle of the worker's own
	// and the one shared handle.
	figure = "Retain+Release, 1 worker: own plain handle / plain-shared handle"
	return append(vs, oneWorker(r, "shared-plain", figure, "shared", "", "own", "plain-shared", 1.05))
}
