package offheap

import (
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pageheap"
)

// The Go runtime's soft memory limit (runtime/debug.SetMemoryLimit,
// GOMEMLIMIT) counts only the memory the runtime manages: a program that
// holds gigabytes off-heap and sets the limit from the machine's memory lets
// the Go heap grow into memory the heaps already use. LimitGoMemory keeps
// the runtime's limit at the total less what the heaps have mapped.
//
// The page heap tells it of every change through pageheap.MappedChanged, which runs
// wherever a heap commits or releases pages and calls followGoLimit while a
// limit is in force. That costs nothing while the heap's mapped bytes stay
// put, and next to the mprotect or madvise that changed them, a lock and
// SetMemoryLimit (BenchmarkGoLimit) are noise. A poller reading the heaps
// ten times a second, the other way to follow them, would cost an idle
// program timer wakeups and lag by up to 100 ms (docs/benchmarks.md,
// LimitGoMemory).
//
// Lock order: a page heap's mu, then goLimits.mu. Nothing under goLimits.mu
// takes a page heap's lock (mappedBytes is an atomic load).

const (
	// The floor under the runtime's limit is an eighth of the total, and at
	// least goLimitFloorMin (but never above the total).
	goLimitFloorDiv = 8
	goLimitFloorMin = 64 << 20
)

// goLimit is one LimitGoMemory in force.
type goLimit struct {
	total int64
	heaps []*Heap
}

// goLimits is every LimitGoMemory in force. on is set while there is one,
// for publishMapped to test without the lock.
var goLimits struct {
	on     atomic.Bool
	mu     sync.Mutex
	active []*goLimit // guarded by mu, as what follows
	before int64      // the runtime's limit before the first of them
	set    int64      // the limit last set
}

// LimitGoMemory keeps the Go runtime's soft memory limit
// (debug.SetMemoryLimit) at total less the bytes the heaps have mapped
// (Default if none is given), updated as they map and release pages, so that
// Go and off-heap memory together stay within total. The limit never goes
// below total/8 (at least 64 MiB), so the Go heap keeps room to work. stop
// restores the limit in force before. Overlapping calls are separate bounds,
// the lowest winning: pass every heap to one call. It panics if total is not
// positive or a heap is nil.
func LimitGoMemory(total int64, heaps ...*Heap) (stop func()) {
	if total <= 0 {
		panic(fmt.Sprintf("offheap: LimitGoMemory: total %d is not positive: pass the bytes the whole program may use", total))
	}
	for i, h := range heaps {
		if h == nil {
			panic(fmt.Sprintf("offheap: LimitGoMemory: heap %d is nil", i))
		}
	}
	if len(heaps) == 0 {
		heaps = []*Heap{Default()}
	}
	l := &goLimit{total: total, heaps: heaps}
	g := &goLimits
	g.mu.Lock()
	if len(g.active) == 0 {
		g.before = debug.SetMemoryLimit(-1)
		g.set = g.before
		g.on.Store(true)
	}
	g.active = append(g.active, l)
	applyGoLimit()
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(l.remove) }
}

// remove takes l out of force: the runtime's limit follows the others, or
// goes back to what it was before the first of them.
func (l *goLimit) remove() {
	g := &goLimits
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, a := range g.active {
		if a == l {
			g.active = append(g.active[:i], g.active[i+1:]...)
			break
		}
	}
	if len(g.active) > 0 {
		applyGoLimit()
		return
	}
	g.on.Store(false)
	debug.SetMemoryLimit(g.before)
}

func init() {
	pageheap.MappedChanged = func() {
		if goLimits.on.Load() {
			followGoLimit()
		}
	}
}

// followGoLimit applies the limits after a heap's mapped bytes changed.
// Called by publishMapped, with that heap's page lock held.
func followGoLimit() {
	goLimits.mu.Lock()
	applyGoLimit()
	goLimits.mu.Unlock()
}

// applyGoLimit sets the runtime's limit to the lowest bound in force, if
// that changed. Called with goLimits.mu held.
func applyGoLimit() {
	g := &goLimits
	if len(g.active) == 0 {
		return // a change that raced with the last stop
	}
	limit := int64(math.MaxInt64)
	for _, l := range g.active {
		limit = min(limit, l.bound())
	}
	if limit != g.set {
		debug.SetMemoryLimit(limit)
		g.set = limit
	}
}

// bound is l's limit for the Go runtime now: its total less what its heaps
// have mapped, but not below the floor.
func (l *goLimit) bound() int64 {
	var mapped uint64
	for _, h := range l.heaps {
		mapped += h.mappedBytes()
	}
	floor := min(l.total, max(l.total/goLimitFloorDiv, goLimitFloorMin))
	if mapped >= uint64(l.total-floor) {
		return floor
	}
	return l.total - int64(mapped)
}
