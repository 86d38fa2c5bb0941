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
// until the test has looked or a while has passed, and the control tries
// again when the goroutine left first: a stop of the world that something
// else starts meanwhile (a collection) waits for the pinned goroutine as
// quiesce does, and the test goroutine with it, so one try can see the
// goroutine leave first; a wait that returns at once is seen doing so in
// one of the tries, and a wait that stops the world in none.
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
	for try := 1; run(func() {}, 100*time.Millisecond); try++ {
		if try == 50 {
			t.Fatal("control: in each of 50 tries the goroutine left its pinned section before the test looked: the test cannot tell a wait that works")
		}
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
