package lines

import (
	"testing"
	"time"
)

// waitMargin is how long before the test binary's deadline (go test's
// -timeout) waitFor gives up: long enough to report which wait it was
// before the binary is stopped with every goroutine's stack.
const waitMargin = 15 * time.Second

// waitFor polls cond until it holds, and fails the test, saying what it
// waited for (what()), only when the test binary's own deadline is near: a
// loaded machine makes a timer late by any amount, and a wait that never
// ends is a hang, which the binary's -timeout reports with the stacks.
func waitFor(t *testing.T, what func() string, cond func() bool) {
	t.Helper()
	// A wait that begins within the margin waits on: failing at once would
	// fail a wait that needed milliseconds, and the binary's timeout
	// reports a hang anyway.
	deadline, ok := t.Deadline()
	limit := deadline.Add(-waitMargin)
	ok = ok && time.Now().Before(limit)
	for sleep := time.Millisecond; !cond(); sleep = min(2*sleep, 50*time.Millisecond) {
		if ok && time.Now().After(limit) {
			t.Fatalf("still waiting near the test binary's deadline: %s", what())
		}
		time.Sleep(sleep)
	}
}

// received reports whether ch has a value, and stores it in v if so.
func received[T any](ch <-chan T, v *T) bool {
	select {
	case *v = <-ch:
		return true
	default:
		return false
	}
}
