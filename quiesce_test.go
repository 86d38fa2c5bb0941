package offheap

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offheap/offheap/internal/pin"
)

// TestQuiesceWaitsForPinned pins a goroutine on another P for a while and
// shows that quiesce, called meanwhile, returns only after it unpinned.
// The positive control is a wait that does not stop the world: it returns
// while the goroutine is still pinned. There the goroutine stays pinned
// until the test has looked (not for a time, which a loaded machine could
// outlast), so the control does not depend on timing.
func TestQuiesceWaitsForPinned(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs 2 Ps: a pinned goroutine keeps the only P to itself")
	}
	// run pins a goroutine for hold, or until the test has looked, and
	// reports whether it had left when wait returned.
	run := func(wait func(), hold time.Duration) (leftFirst bool) {
		var pinned, left, looked atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			pin.Pin()
			pinned.Store(true)
			for t0 := time.Now(); time.Since(t0) < hold && !looked.Load(); {
			}
			left.Store(true)
			pin.Unpin()
		}()
		for !pinned.Load() {
			runtime.Gosched()
		}
		wait()
		leftFirst = left.Load()
		looked.Store(true)
		<-done
		return leftFirst
	}
	if !run(quiesce, 30*time.Millisecond) {
		t.Fatal("quiesce returned while a goroutine was still pinned")
	}
	if run(func() {}, time.Minute) {
		t.Fatal("control: the goroutine left its pinned section before the test looked: the test cannot tell a wait that works")
	}
}

// TestWorldStops checks that the runtime's pause metrics count the stops
// that runtime.ReadMemStats makes, so that quiesce does not fall back on a
// garbage collection.
func TestWorldStops(t *testing.T) {
	before := worldStops()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.ReadMemStats(&ms)
	if after := worldStops(); after < before+2 {
		t.Fatalf("world stops counted %d then %d around two ReadMemStats", before, after)
	}
}
