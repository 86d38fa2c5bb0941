package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

// syncBuffer is a strings.Builder that the progress ticker and the test
// write and read under a lock.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProgressLines: a piped run's progress says when a shape starts and
// when it is done, and stop ends its ticker (a second stop would panic on
// the closed channel, so each run stops once). Positive control: without
// the start report, the first line is missing.
func TestProgressLines(t *testing.T) {
	var out syncBuffer
	report, stop := lines(&out)
	report(bench.Progress{Shape: "pairs", ShapeIndex: 1, Shapes: 2, Total: 4, Note: "started"})
	report(bench.Progress{Shape: "pairs", ShapeIndex: 1, Shapes: 2, Trial: "Pairs/x", Done: 4, Total: 4, ShapeDone: true})
	stop()
	got := out.String()
	for _, want := range []string{"shape 1 of 2, pairs, started\n", "shape 1 of 2, pairs, done in"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress lacks %q; got:\n%s", want, got)
		}
	}
}

// TestFit: a progress line that would pass bench.Width loses the middle of
// its trial name, and no more; a short one is left as it is.
func TestFit(t *testing.T) {
	head, tail := "offheap bench: shape 2 of 14, pairs, 12s: ", " done (307 of 1860 trials)"
	long := "Pairs/size=64-unzeroed/arm=offheap-nomag-with-a-long-name/workers=1"
	got := fit(head, long, tail)
	if len(got) != bench.Width || !strings.HasPrefix(got, head+"Pairs/") || !strings.HasSuffix(got, "workers=1"+tail) {
		t.Errorf("fit of a long line: %q (%d columns), want %d with its ends", got, len(got), bench.Width)
	}
	if got := fit(head, "Pairs/size=64", tail); got != head+"Pairs/size=64"+tail {
		t.Errorf("fit of a short line: %q", got)
	}
}
