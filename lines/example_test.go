package lines_test

import (
	"bytes"
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

// ForceColor(true) emits styles to a writer that is not a terminal, for a
// pager or a CI log that shows colors (a --color=always flag); it overrides
// NO_COLOR. ForceColor(false) writes plain text even to a terminal.
func ExampleForceColor() {
	var b bytes.Buffer
	w := lines.NewWriter(&b, lines.ForceColor(true))
	w.Color(lines.Red).Println("error")
	w.Close()
	fmt.Printf("%q\n", b.String())
	// Output:
	// "\x1b[31merror\x1b[0m\n"
}

// A Segment colors one part of a line, such as a level tag; widths and
// flags apply to its text. os.Stdout is a pipe when examples run, so the
// segment comes out plain here, and in red on a terminal.
func ExampleStyle_Segment() {
	w := lines.NewWriter(os.Stdout)
	defer w.Close()

	warn := w.Color(lines.Yellow).Segment("WARN")
	w.Printf("%-5v disk 91%% full", warn)
	w.Println(w.Color(lines.Red).Bold().Segment("ERROR"), "disk full")
	// Output:
	// WARN  disk 91% full
	// ERROR disk full
}

// log.Fatal calls os.Exit right after it writes, so nothing buffered is
// flushed: on os.Stderr a Writer writes every line at once, and the fatal
// message is out before the exit. Through a batched Writer (a pipe or a
// file that is not stderr), close the Writer before exiting instead of
// calling log.Fatal.
func ExampleNewWriter_fatal() {
	// A Writer on stderr: log.Fatal's message is written before os.Exit.
	log.SetOutput(lines.NewWriter(os.Stderr))

	// A batched Writer: print, close (which flushes), then exit.
	f, err := os.CreateTemp("", "app.log")
	if err != nil {
		log.Fatal(err)
	}
	w := lines.NewWriter(f)
	logger := log.New(w, "", log.LstdFlags)
	fatal := func(v ...any) {
		logger.Print(v...)
		w.Close()
		os.Exit(1)
	}
	conf, err := os.ReadFile("app.conf")
	if err != nil {
		fatal(err) // logger.Fatal(err) would leave the message in w's buffer
	}
	logger.Printf("read %d bytes of configuration", len(conf))
	w.Close()
}
