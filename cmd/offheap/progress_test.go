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
