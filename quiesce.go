package offheap

import (
	"runtime"
	"runtime/metrics"
)

// quiesce returns once every goroutine that was inside a pinned section
// (between pin.Pin and pin.Unpin) when quiesce was called has left it. Trim
// uses it to take other Ps' magazines: it unpublishes them first, and after
// quiesce no goroutine can still be popping from or pushing to one.
//
// A pinned goroutine cannot be preempted, so a stop-the-world, which stops
// every P at a preemption point, cannot complete while one is pinned: any
// stop-the-world that begins after the call ends every pinned section that
// began before it. sync.Pool's cleanup relies on the same property. The
// runtime does not promise that a given call stops the world, so quiesce
// does not assume it: runtime.ReadMemStats stops the world in the Go
// versions offheap supports, and quiesce counts the stops in the runtime's
// own pause metrics around two calls of it. Two, because the stop that a
// count first shows may have stopped the world just before the call (the
// runtime restarts the Ps before it records the pause), while the stops
// that follow it are serialized behind it. Should the count not rise by
// two, quiesce falls back on runtime.GC, whose cycle stops the world after
// it is called, by design.
func quiesce() {
	before := worldStops()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.ReadMemStats(&ms)
	if worldStops() >= before+2 {
		return
	}
	runtime.GC()
}

// stopMetrics are the runtime's histograms of stop-the-world pauses, for
// garbage collection and for everything else.
var stopMetrics = [...]string{"/sched/pauses/total/gc:seconds", "/sched/pauses/total/other:seconds"}

// worldStops is how many times the runtime has stopped the world, as its
// pause metrics count them; 0 if it does not publish them.
func worldStops() uint64 {
	var s [len(stopMetrics)]metrics.Sample
	for i, name := range stopMetrics {
		s[i].Name = name
	}
	metrics.Read(s[:])
	var n uint64
	for _, x := range s {
		if x.Value.Kind() != metrics.KindFloat64Histogram {
			return 0
		}
		for _, c := range x.Value.Float64Histogram().Counts {
			n += c
		}
	}
	return n
}
