package lines

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The torn-line test: goroutines each write lines of one letter; the checker
// counts lines that are exactly one letter repeated, and the test demands
// the exact total. Counting bad lines instead would pass a run that wrote
// nothing.

const (
	tearGoroutines = 4
	tearPerG       = 50
	tearWidth      = 300
)

// letterLine is the line goroutine g writes, without its newline.
func letterLine(g int) string { return strings.Repeat(string(rune('a'+g)), tearWidth) }

// checkWhole counts, per letter, the lines of out that are exactly width
// copies of that letter, and describes every other line (and a missing
// final newline) in bad.
func checkWhole(out []byte, width int) (whole map[byte]int, bad []string) {
	whole = map[byte]int{}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		bad = append(bad, "output does not end in a newline")
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(line) == width && len(bytes.Trim(line, string(line[:1]))) == 0 {
			whole[line[0]]++
			continue
		}
		if len(line) > 40 {
			line = append(line[:40:40], "..."...)
		}
		bad = append(bad, fmt.Sprintf("line %d: %q", i+1, line))
	}
	return whole, bad
}

// wantWhole fails t unless out holds exactly perG whole lines of each of
// goroutines letters and nothing else.
func wantWhole(t *testing.T, out []byte, goroutines, perG int) {
	t.Helper()
	whole, bad := checkWhole(out, tearWidth)
	total := 0
	for _, n := range whole {
		total += n
	}
	if total != goroutines*perG || len(bad) > 0 {
		t.Fatalf("got %d whole lines, want %d; %d other lines, first: %v",
			total, goroutines*perG, len(bad), bad[:min(len(bad), 3)])
	}
	for g := range goroutines {
		if n := whole[byte('a'+g)]; n != perG {
			t.Errorf("letter %c: %d whole lines, want %d", 'a'+g, n, perG)
		}
	}
}

// tearingWriter writes byte by byte and yields between bytes, so that any
// two unsynchronised calls overlap. Its own lock is per byte: it keeps the
// writer itself race-free without making a whole call atomic.
type tearingWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (tw *tearingWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		tw.mu.Lock()
		tw.buf.WriteByte(c)
		tw.mu.Unlock()
		runtime.Gosched()
	}
	return len(p), nil
}

func (tw *tearingWriter) Bytes() []byte {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return bytes.Clone(tw.buf.Bytes())
}

// writeLetters has each goroutine write perG lines of its letter, cycling
// through Write, Println and Printf, then closes w.
func writeLetters(w *Writer, goroutines, perG int) error {
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			line := letterLine(g)
			b := []byte(line + "\n")
			for i := range perG {
				switch i % 3 {
				case 0:
					_, _ = w.Write(b)
				case 1:
					w.Println(line)
				case 2:
					w.Printf("%s", line)
				}
			}
		})
	}
	wg.Wait()
	return w.Close()
}

func TestLinesWhole(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"buffered", nil},
		{"linemode", []Option{LineMode(true)}},
		{"smallbuffer", []Option{BufferSize(1000)}},             // flush every 3 lines
		{"tinybuffer", []Option{BufferSize(100)}},               // every line straight through
		{"timer", []Option{FlushInterval(1), BufferSize(4000)}}, // flushes from the timer goroutine too
	} {
		t.Run(tc.name, func(t *testing.T) {
			tw := &tearingWriter{}
			w := NewWriter(tw, tc.opts...)
			if err := writeLetters(w, tearGoroutines, tearPerG); err != nil {
				t.Fatal(err)
			}
			wantWhole(t, tw.Bytes(), tearGoroutines, tearPerG)
		})
	}
}

// TestLinesWholeControl is the positive control: without the lock, the same
// writers on the same underlying writer tear lines, and checkWhole must say
// so. If it did not, TestLinesWhole would prove nothing.
func TestLinesWholeControl(t *testing.T) {
	const tries = 10
	for try := 1; try <= tries; try++ {
		tw := &tearingWriter{}
		w := NewWriter(tw)
		w.noLock = true
		if err := writeLetters(w, tearGoroutines, tearPerG); err != nil {
			t.Fatal(err)
		}
		out := tw.Bytes()
		if got, want := len(out), tearGoroutines*tearPerG*(tearWidth+1); got != want {
			t.Fatalf("unlocked run wrote %d bytes, want %d", got, want)
		}
		whole, bad := checkWhole(out, tearWidth)
		if len(bad) > 0 {
			total := 0
			for _, n := range whole {
				total += n
			}
			t.Logf("try %d: checker found %d torn lines (%d whole), e.g. %s", try, len(bad), total, bad[0])
			return
		}
	}
	t.Fatalf("no torn line in %d unlocked runs: the checker or the control is broken", tries)
}
