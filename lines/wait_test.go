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
	deadline, ok := t.Deadline()
	for sleep := time.Millisecond; !cond(); sleep = min(2*sleep, 50*time.Millisecond) {
		if ok && time.Until(deadline) < waitMargin {
			t.Fatalf("still waiting at the test binary's deadline: %s", what())
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
