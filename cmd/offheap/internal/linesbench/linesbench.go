// Package linesbench is the harness that compares lines.Writer with
// log.Logger: many goroutines writing fixed-size lines into an OS pipe whose
// read end is drained by another goroutine. It counts the write calls that
// reach the pipe and checks that every byte arrives.
//
// It exists so that the project's bench command and the package's
// `go test -bench` benchmarks measure exactly the same thing. It is not part
// of the lines API.
package linesbench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offheap/offheap/lines"
)

// A Target selects the writer under test.
type Target string

// The targets Run knows.
const (
	// Lines is a lines.Writer with default options on the pipe; the pipe
	// is not a terminal, so it buffers (no line mode).
	Lines Target = "lines"
	// Log is log.New(pipe, "", 0): one mutex and one write per line.
	Log Target = "log"
)

// Result is what one Run measured.
type Result struct {
	Target     Target
	Goroutines int
	// Elapsed runs from the start of the writers until the reader has
	// seen every byte, so buffered output still in flight is counted.
	Elapsed time.Duration
	// Writes is the number of Write calls that reached the pipe.
	Writes int
	// Lines is the number of newline-terminated lines read back.
	Lines int
}

// WritesPerLine is Writes divided by Lines.
func (r Result) WritesPerLine() float64 {
	if r.Lines == 0 {
		return 0
	}
	return float64(r.Writes) / float64(r.Lines)
}

// String formats r for a report.
func (r Result) String() string {
	return fmt.Sprintf("%s g=%d: %d lines in %v (%.1f ns/line), %d writes (%.5f writes/line)",
		r.Target, r.Goroutines, r.Lines, r.Elapsed,
		float64(r.Elapsed.Nanoseconds())/float64(max(r.Lines, 1)), r.Writes, r.WritesPerLine())
}

// Run writes nlines lines of lineSize bytes (newline included) from
// goroutines goroutines through target into a fresh os.Pipe, and returns
// the time taken and the number of writes that reached the pipe. Goroutine
// g writes lines of the letter 'a'+g%26, formatted with Println for Lines
// and Print for Log, so both pay for fmt. Run fails if a byte or a line is
// missing, which would make the timing meaningless.
func Run(target Target, nlines, goroutines, lineSize int) (Result, error) {
	if nlines < 0 || goroutines < 1 || lineSize < 1 {
		return Result{}, fmt.Errorf("linesbench: bad arguments nlines=%d goroutines=%d lineSize=%d", nlines, goroutines, lineSize)
	}
	if target != Lines && target != Log {
		return Result{}, fmt.Errorf("linesbench: unknown target %q", target)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer pr.Close()
	cw := &countingWriter{w: pw}

	var readLines, readBytes int
	var readErr error
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 256<<10)
		for {
			n, err := pr.Read(buf)
			readLines += bytes.Count(buf[:n], []byte{'\n'})
			readBytes += n
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = err
				}
				return
			}
		}
	}()

	msgs := make([]string, goroutines)
	for g := range msgs {
		msgs[g] = string(bytes.Repeat([]byte{byte('a' + g%26)}, lineSize-1))
	}
	var print func(msg string)
	var closeTarget func() error
	switch target {
	case Lines:
		lw := lines.NewWriter(cw)
		print = func(msg string) { lw.Println(msg) }
		closeTarget = lw.Close
	case Log:
		l := log.New(cw, "", 0)
		print = func(msg string) { l.Print(msg) }
		closeTarget = func() error { return nil }
	}

	start := time.Now()
	var wg sync.WaitGroup
	for g := range goroutines {
		n := nlines / goroutines
		if g < nlines%goroutines {
			n++
		}
		wg.Go(func() {
			msg := msgs[g]
			for range n {
				print(msg)
			}
		})
	}
	wg.Wait()
	cerr := closeTarget()
	pw.Close()
	<-drained
	elapsed := time.Since(start)

	res := Result{
		Target:     target,
		Goroutines: goroutines,
		Elapsed:    elapsed,
		Writes:     int(cw.n.Load()),
		Lines:      readLines,
	}
	switch {
	case cerr != nil:
		return res, cerr
	case readErr != nil:
		return res, readErr
	case readLines != nlines || readBytes != nlines*lineSize:
		return res, fmt.Errorf("linesbench: read %d lines, %d bytes; want %d lines, %d bytes",
			readLines, readBytes, nlines, nlines*lineSize)
	}
	return res, nil
}

// countingWriter counts the Write calls that reach the pipe. Hiding the
// *os.File behind it also keeps lines.NewWriter from treating the pipe
// specially, which it would not anyway: a pipe is not a terminal.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.w.Write(p)
}
