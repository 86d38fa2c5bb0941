package lines_test

import (
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"

	"github.com/offheap/offheap/lines"
)

// Many goroutines share one Writer; every line comes out whole, and Close
// flushes what is still buffered.
func Example() {
	w := lines.NewWriter(os.Stdout)
	defer w.Close()

	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			w.Printf("worker %d done", g) // Printf adds the newline
		})
	}
	wg.Wait()
	// Unordered output:
	// worker 0 done
	// worker 1 done
	// worker 2 done
}

// Styles are emitted only to a terminal. os.Stdout is a pipe when examples
// run, so the text comes out plain.
func ExampleWriter_Color() {
	w := lines.NewWriter(os.Stdout)
	defer w.Close()

	w.Color(lines.Red).Bold().Println("error:", "disk full")
	w.Color(lines.Green).Printf("ok: %d files", 3)
	// Output:
	// error: disk full
	// ok: 3 files
}

// Escape sequences in text written to a non-terminal are stripped, so logs
// piped to a file stay clean.
func ExampleWriter_Write() {
	w := lines.NewWriter(os.Stdout)
	defer w.Close()

	fmt.Fprintf(w, "progress \x1b[1m42%%\x1b[0m\n")
	// Output:
	// progress 42%
}

// A Writer under log.New: log makes one Write per record, and each record
// stays whole however many goroutines log.
func ExampleNewWriter_log() {
	w := lines.NewWriter(os.Stdout)
	defer w.Close()

	l := log.New(w, "app: ", 0)
	l.Println("started")
	// Output:
	// app: started
}

// A Writer under slog, with line mode forcing a write per record, as on a
// terminal.
func ExampleNewWriter_slog() {
	w := lines.NewWriter(os.Stdout, lines.LineMode(true))
	defer w.Close()

	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: noTime}))
	logger.Info("listening", "port", 8080)
	// Output:
	// level=INFO msg=listening port=8080
}

// A String method may print to the same Writer: formatting happens before
// the lock is taken, so this neither deadlocks nor tears a line.
func ExampleWriter_Println() {
	w := lines.NewWriter(os.Stdout)
	defer w.Close()

	w.Println("answer:", chatty{w})
	// Output:
	// computing the answer
	// answer: 42
}

type chatty struct{ w *lines.Writer }

func (c chatty) String() string {
	c.w.Println("computing the answer")
	return "42"
}
