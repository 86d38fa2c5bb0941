package lines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder keeps every Write call separately, so tests can see how output
// was batched.
type recorder struct {
	mu    sync.Mutex
	calls [][]byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, bytes.Clone(p))
	return len(p), nil
}

func (r *recorder) Calls() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.calls...)
}

func (r *recorder) String() string { return string(bytes.Join(r.Calls(), nil)) }

// within runs f and fails t if it has not returned by the test binary's
// deadline (waitFor): the way to test for a deadlock without hanging the
// test binary, whatever the machine's speed.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	var v struct{}
	waitFor(t, func() string { return "still running: deadlock?" }, func() bool { return received(done, &v) })
}

// reentrant is a Stringer whose String writes a line to the same Writer.
type reentrant struct {
	w     *Writer
	inner string
	outer string
}

func (r reentrant) String() string {
	r.w.Println(r.inner)
	return r.outer
}

func TestStringerWritesToSameWriter(t *testing.T) {
	for _, mode := range []bool{false, true} {
		t.Run(fmt.Sprintf("linemode=%v", mode), func(t *testing.T) {
			rec := &recorder{}
			w := NewWriter(rec, LineMode(mode))
			within(t, func() {
				w.Println(reentrant{w, "inner 1", "outer 1"})
				w.Printf("%v!", reentrant{w, "inner 2", "outer 2"})
				if err := w.Close(); err != nil {
					t.Error(err)
				}
			})
			// String runs while the outer call formats, before it takes the
			// lock, so the inner line is committed first and both are whole.
			want := "inner 1\nouter 1\ninner 2\nouter 2!\n"
			if got := rec.String(); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestStringerConcurrent(t *testing.T) {
	tw := &tearingWriter{}
	w := NewWriter(tw, BufferSize(1000))
	within(t, func() {
		var wg sync.WaitGroup
		for g := range tearGoroutines {
			wg.Go(func() {
				line := letterLine(g)
				for range tearPerG / 2 {
					w.Println(reentrant{w, line, line})
				}
			})
		}
		wg.Wait()
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	wantWhole(t, tw.Bytes(), tearGoroutines, tearPerG)
}

var errBoom = errors.New("boom")

// failWriter accepts ok calls, then fails every call with errBoom.
type failWriter struct {
	mu    sync.Mutex
	ok    int
	calls int
	short bool // on failure, report a short write with no error instead
}

func (f *failWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= f.ok {
		return len(p), nil
	}
	if f.short {
		return len(p) / 2, nil
	}
	return 0, errBoom
}

func (f *failWriter) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// wantSticky checks that every call after a failure reports err and that
// nothing more reaches fw.
func wantSticky(t *testing.T, w *Writer, fw *failWriter, err error) {
	t.Helper()
	calls := fw.Calls()
	if n, got := w.Write([]byte("x\n")); !errors.Is(got, err) || n != 0 {
		t.Errorf("Write after failure = %d, %v; want 0, %v", n, got, err)
	}
	w.Println("y")
	if got := w.Flush(); !errors.Is(got, err) {
		t.Errorf("Flush after failure = %v; want %v", got, err)
	}
	if got := w.Close(); !errors.Is(got, err) {
		t.Errorf("Close after failure = %v; want %v", got, err)
	}
	if got := fw.Calls(); got != calls {
		t.Errorf("%d more writes reached the failed writer", got-calls)
	}
}

func TestErrorSticky(t *testing.T) {
	t.Run("flush", func(t *testing.T) {
		fw := &failWriter{}
		w := NewWriter(fw, FlushInterval(0))
		w.Println("buffered")
		if err := w.Flush(); !errors.Is(err, errBoom) {
			t.Fatalf("Flush = %v, want %v", err, errBoom)
		}
		wantSticky(t, w, fw, errBoom)
	})
	t.Run("linemode", func(t *testing.T) {
		fw := &failWriter{ok: 1}
		w := NewWriter(fw, LineMode(true))
		w.Println("ok")
		w.Println("fails") // no error result: the next call reports it
		wantSticky(t, w, fw, errBoom)
	})
	t.Run("buffer-full", func(t *testing.T) {
		fw := &failWriter{}
		w := NewWriter(fw, BufferSize(10), FlushInterval(0))
		if _, err := w.Write([]byte("12345\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("12345\n")); !errors.Is(err, errBoom) {
			t.Fatalf("Write that forced a flush = %v, want %v", err, errBoom)
		}
		wantSticky(t, w, fw, errBoom)
	})
	t.Run("straight-through", func(t *testing.T) {
		fw := &failWriter{}
		w := NewWriter(fw, BufferSize(10))
		if _, err := w.Write(make([]byte, 100)); !errors.Is(err, errBoom) {
			t.Fatalf("large Write = %v, want %v", err, errBoom)
		}
		wantSticky(t, w, fw, errBoom)
	})
	t.Run("short-write", func(t *testing.T) {
		fw := &failWriter{short: true}
		w := NewWriter(fw, LineMode(true))
		w.Println("half of this")
		wantSticky(t, w, fw, io.ErrShortWrite)
	})
	t.Run("timer", func(t *testing.T) {
		fw := &failWriter{}
		w := NewWriter(fw, FlushInterval(time.Millisecond))
		w.Println("flushed by the timer, which fails")
		waitFor(t, func() string { return "timer never flushed" }, func() bool { return fw.Calls() != 0 })
		wantSticky(t, w, fw, errBoom)
	})
}

func TestClose(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec, FlushInterval(0))
	for i := range 1000 {
		w.Printf("line %d", i)
	}
	if n := len(rec.Calls()); n != 0 {
		// Everything must still be buffered, or "Close flushes" is untested.
		t.Fatalf("%d writes before Close", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(rec.String(), "\n"); got != 1000 {
		t.Fatalf("after Close, %d lines written, want 1000", got)
	}
	if !strings.HasSuffix(rec.String(), "line 999\n") {
		t.Errorf("output ends %q", rec.String()[len(rec.String())-20:])
	}
	calls := len(rec.Calls())
	if n, err := w.Write([]byte("late\n")); n != 0 || !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %d, %v; want 0, ErrClosed", n, err)
	}
	w.Println("late")
	w.Color(Red).Printf("late")
	if err := w.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close = %v; want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
	if got := len(rec.Calls()); got != calls {
		t.Errorf("%d writes after Close", got-calls)
	}
}

func TestCloseStopsTimer(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec, FlushInterval(time.Millisecond))
	w.Println("a")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a live timer would have fired by now
	if got := rec.String(); got != "a\n" {
		t.Errorf("got %q", got)
	}
}

func TestFlushInterval(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec, FlushInterval(5*time.Millisecond))
	defer w.Close()
	for round := range 3 { // the timer must re-arm after each flush
		line := fmt.Sprintf("round %d\n", round)
		w.Println(strings.TrimSuffix(line, "\n"))
		waitFor(t, func() string {
			return fmt.Sprintf("round %d: not flushed by the timer; have %q", round, rec.String())
		}, func() bool { return strings.HasSuffix(rec.String(), line) })
	}

	// Control: without the timer, output stays buffered.
	rec2 := &recorder{}
	w2 := NewWriter(rec2, FlushInterval(0))
	w2.Println("stays")
	time.Sleep(30 * time.Millisecond)
	if got := rec2.String(); got != "" {
		t.Errorf("FlushInterval(0) wrote %q without a flush", got)
	}
	if err := w2.Close(); err != nil || rec2.String() != "stays\n" {
		t.Errorf("Close = %v, output %q", err, rec2.String())
	}
}

func TestStraightThrough(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec, BufferSize(64), FlushInterval(0))
	big := strings.Repeat("B", 200) + "\n"
	w.Println("small")
	if n, err := w.Write([]byte(big)); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	w.Println("after")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := []string{"small\n", big, "after\n"}
	calls := rec.Calls()
	if len(calls) != len(want) {
		t.Fatalf("got %d writes %q, want %q", len(calls), calls, want)
	}
	for i := range want {
		if string(calls[i]) != want[i] {
			t.Errorf("write %d = %q, want %q", i, calls[i], want[i])
		}
	}
}

func TestBufferFullKeepsCallsWhole(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec, BufferSize(100), FlushInterval(0))
	line := strings.Repeat("x", 29) + "\n"
	for range 10 {
		w.Println(line[:29])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	calls := rec.Calls()
	for i, c := range calls {
		if len(c)%len(line) != 0 || len(c) > 100 {
			t.Errorf("write %d is %d bytes: not whole lines within the buffer", i, len(c))
		}
	}
	if len(calls) != 4 { // 3+3+3+1 lines
		t.Errorf("%d writes, want 4", len(calls))
	}
}

// countingWriter counts write calls and bytes.
type countingWriter struct{ writes, bytes atomic.Int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	c.bytes.Add(int64(len(p)))
	return len(p), nil
}

// TestWritesPerLine is the non-timed half of the benchmark's claim: with a
// big buffer and no line mode, at most one underlying write per 32 lines.
// Line mode is the control: one write per line, which the check rejects.
func TestWritesPerLine(t *testing.T) {
	const nlines, goroutines = 10000, 4
	line := strings.Repeat("z", 79)
	run := func(opts ...Option) (writes int64) {
		cw := &countingWriter{}
		w := NewWriter(cw, opts...)
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range nlines / goroutines {
					w.Println(line)
				}
			})
		}
		wg.Wait()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := cw.bytes.Load(); got != nlines*80 {
			t.Fatalf("%d bytes written, want %d", got, nlines*80)
		}
		return cw.writes.Load()
	}
	ok := func(writes int64) bool { return writes*32 <= nlines }

	writes := run(BufferSize(64<<10), LineMode(false), FlushInterval(0))
	t.Logf("buffered: %d writes for %d lines (%.4f/line)", writes, nlines, float64(writes)/nlines)
	if !ok(writes) {
		t.Errorf("%d writes for %d lines: more than one per 32", writes, nlines)
	}
	if control := run(LineMode(true)); ok(control) || control != nlines {
		t.Errorf("control: line mode made %d writes for %d lines; the check would not catch it", control, nlines)
	}
}
