package lines

import (
	"log"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// log.Logger and slog handlers make one Write call per record, so a Writer
// under them keeps every record whole.

func TestUnderLogLogger(t *testing.T) {
	tw := &tearingWriter{}
	w := NewWriter(tw, BufferSize(1000))
	l := log.New(w, "", 0)
	var wg sync.WaitGroup
	for g := range tearGoroutines {
		wg.Go(func() {
			line := letterLine(g)
			for range tearPerG {
				l.Print(line) // log adds the newline
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantWhole(t, tw.Bytes(), tearGoroutines, tearPerG)
}

func TestUnderSlog(t *testing.T) {
	tw := &tearingWriter{}
	w := NewWriter(tw, BufferSize(1000))
	// Drop the time so the records are predictable.
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: noTime}))
	var wg sync.WaitGroup
	for g := range tearGoroutines {
		wg.Go(func() {
			line := letterLine(g)
			for i := range tearPerG {
				logger.Info(line, "g", g, "i", i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	record := regexp.MustCompile(`^level=INFO msg=([a-z]+) g=(\d+) i=(\d+)$`)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(tw.Bytes()), "\n"), "\n") {
		m := record.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("torn record: %.60q", line)
		}
		if g, _ := strconv.Atoi(m[2]); m[1] != letterLine(g) {
			t.Fatalf("torn message in record: %.60q", line)
		}
		key := m[2] + "/" + m[3]
		if seen[key] {
			t.Fatalf("record %s twice", key)
		}
		seen[key] = true
	}
	if len(seen) != tearGoroutines*tearPerG {
		t.Fatalf("%d whole records, want %d", len(seen), tearGoroutines*tearPerG)
	}
}
