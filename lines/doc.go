// Package lines is goroutine-safe line output: every line comes out whole,
// the underlying writer sees few, large writes, and formatting can never
// deadlock against the output lock.
//
// # Why
//
// A runtime that takes an I/O lock per output statement pays for the lock on
// every line; if deciding who owns the lock costs a system call, that cost
// dominates (docs/benchmarks.md of this repository has the measurement).
// Caching the owner's identity in thread-local storage to avoid the call
// silently broke mutual exclusion for threads the runtime had not created. And
// the same measurement found two write calls per line, where plain buffering
// would have beaten the whole fix. A Writer therefore:
//
//   - never asks the OS, or anything else, who the caller is — a goroutine has
//     no identity to verify, and the lock is an ordinary sync.Mutex;
//   - buffers, so the only system call is the batched write (one per
//     BufferSize bytes, per FlushInterval, or per line in line mode, the
//     default on a terminal and on stderr);
//   - keeps one call's bytes together: a Write, Println or Printf is appended
//     to the buffer under the lock as a unit, and a call larger than the
//     buffer is written straight through, under the same lock, as one write.
//
// # Lock discipline
//
// Formatting (fmt verbs, String and Format methods, escape stripping) happens
// before the lock is taken, into a byte slice the calling goroutine owns,
// taken from a sync.Pool. The lock is held only to copy the finished bytes
// into the shared buffer and, when a flush is due, for the write to the
// underlying io.Writer. Because no user code runs under the lock, a String
// method that itself prints to the same Writer neither deadlocks nor tears a
// line: its line simply comes out first.
//
// Write errors are sticky, as in bufio.Writer: once the underlying writer
// fails, every later Write, Flush and Close returns that error and nothing
// more is written. Println and Printf have no error result; their errors
// surface at the next Write, Flush or Close.
//
// A Writer is a suitable output for log.New and for slog handlers, which
// make one Write call per record.
//
// # Terminals, standard error and log.Fatal
//
// NewWriter checks once whether the destination is a terminal, and whether
// it is the process's standard error. On either, line mode (a write after
// every call) is on by default: a person is waiting for each line, and
// stderr is unbuffered by convention. Anywhere else, lines are batched;
// LineMode(true) marks any writer as one that must get every line at once.
//
// Batching has one trap: log.Fatal (and log.Panic's crash, and any os.Exit)
// ends the process right after its Write, and output still in a Writer's
// buffer is lost, the fatal message with it. On os.Stderr the message is
// out before the exit. Through a batched Writer, do not call log.Fatal:
// log, Close the Writer (which flushes), then os.Exit; see
// ExampleNewWriter_fatal.
//
// # Colors and escape sequences
//
// To a terminal, the styled views returned by Writer.Color and Writer.Bold
// emit ANSI SGR sequences, unless the NO_COLOR environment variable is set
// and non-empty. A Style colors a whole line (Style.Println); a Segment
// (Style.Segment) colors one part of a line, such as a level tag. To
// anything else, styles are dropped and escape sequences that arrive
// inside ordinary text are stripped (unless AllowEscapes(true)), so logs
// piped to a file stay clean. ForceColor(true) or ForceColor(false)
// overrides both the detection and NO_COLOR, as a --color flag should.
//
// # What it is not
//
// It is not a logger: no levels, timestamps or structure — put log or slog
// on top. It does not close the underlying writer. It does not order lines
// across goroutines beyond "each call is atomic"; and a line split over
// several Write calls by the caller is several units, which may interleave
// with other goroutines' output. Escape sequences are recognised within one
// call; a sequence split across calls is not stripped as a whole. Output
// buffered when the process exits without Flush or Close is lost (see
// log.Fatal above).
package lines
