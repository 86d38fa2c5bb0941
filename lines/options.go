package lines

import "time"

// DefaultBufferSize is the buffer size used when BufferSize is not given.
// 64 KiB matches the default Linux pipe capacity, so one flush fills a pipe
// with one write; for 80-byte lines that is about 800 lines per write.
const DefaultBufferSize = 64 << 10

// DefaultFlushInterval is the longest time buffered output waits before it
// is written, when FlushInterval is not given. 100ms is short enough that a
// person tailing a log does not notice the delay and long enough that a
// busy writer still fills whole buffers.
const DefaultFlushInterval = 100 * time.Millisecond

// An Option configures a Writer in NewWriter.
type Option func(*config)

// config collects the options; it is separate from Writer so that options
// cannot be applied to a Writer that is already in use.
type config struct {
	size     int
	interval time.Duration
	lineMode *bool // nil: decide from terminal and stderr detection
	color    *bool // nil: decide from terminal detection and NO_COLOR
	allowEsc bool
}

// BufferSize sets the size of the Writer's buffer in bytes. A single call
// larger than the buffer is written straight through as one write. Values
// n <= 0 select DefaultBufferSize, as bufio.NewWriterSize does.
func BufferSize(n int) Option {
	return func(c *config) {
		if n <= 0 {
			n = DefaultBufferSize
		}
		c.size = n
	}
}

// FlushInterval sets the longest time output may sit in the buffer before a
// background flush writes it. d <= 0 disables timed flushing: output is then
// written only when the buffer fills, on Flush, on Close, or per call in
// line mode.
//
// The background flusher is a timer armed when the buffer goes from empty to
// non-empty, not a goroutine that ticks forever: an idle Writer costs
// nothing, and one that is never closed leaks no goroutine. The timer's
// function runs on its own goroutine, takes the lock like any caller, and is
// stopped by Close.
func FlushInterval(d time.Duration) Option {
	return func(c *config) { c.interval = d }
}

// LineMode sets whether every call is flushed at once. It is on by default
// when the underlying writer is a terminal, where a person is waiting for
// each line, or the process's standard error, which is unbuffered by
// convention (a program's last words, such as log.Fatal's, must not wait in
// a buffer: see the package documentation); off otherwise, where batching
// is what makes output cheap. LineMode(true) marks any other writer the
// same way, LineMode(false) batches even a terminal.
func LineMode(on bool) Option {
	return func(c *config) { c.lineMode = &on }
}

// ForceColor sets whether styles are emitted, whatever NewWriter finds:
// ForceColor(true) emits them to a pipe or a file too (for a pager such as
// less -R, or a CI log that shows colors) and lets escape sequences in text
// through, as to a terminal; ForceColor(false) writes plain text even to a
// terminal. It overrides NO_COLOR, as a command-line flag such as
// --color=always should. Without it, styles are emitted only to a terminal,
// and only when NO_COLOR is unset or empty.
func ForceColor(on bool) Option {
	return func(c *config) { c.color = &on }
}

// AllowEscapes sets whether escape sequences inside ordinary text are passed
// through to a non-terminal. By default they are stripped so that files and
// pipes receive plain text. Styles from Writer.Color and Writer.Bold are not
// sent to a non-terminal either way (ForceColor sends them). To a terminal,
// text is always passed through unchanged.
func AllowEscapes(on bool) Option {
	return func(c *config) { c.allowEsc = on }
}
