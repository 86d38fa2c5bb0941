package lines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// ErrClosed is returned by Write and Flush on a Writer that has been closed.
var ErrClosed = errors.New("lines: writer is closed")

// A Writer is a buffered, goroutine-safe writer whose calls are atomic: the
// bytes of one Write, Println or Printf never interleave with those of
// another call. Create one with NewWriter; the zero value is not usable.
type Writer struct {
	out      io.Writer
	interval time.Duration
	lineMode bool
	terminal bool // detected once, in NewWriter
	color    bool // styles emitted: ForceColor, or a terminal and NO_COLOR unset or empty
	strip    bool // escapes in text removed: not a terminal, no ForceColor(true), escapes not allowed

	// noLock is a test hook: it sends each call straight to out without
	// taking mu, which is what the package would be without its lock. It
	// bypasses the buffer too, because the lock also guards the buffer and
	// an unlocked buffer would be a data race (caught by -race) rather
	// than the torn lines the tests want to show the checker detects.
	noLock bool

	mu         sync.Mutex
	buf        []byte // pending output; cap(buf) is the buffer size
	size       int
	err        error // sticky: first error from out
	closed     bool
	timer      *time.Timer
	timerArmed bool
}

// NewWriter returns a Writer that buffers output for w. It checks once
// whether w is a terminal (an *os.File, or anything with an Fd method, that
// refers to one); that decides whether styles are emitted and whether escape
// sequences in text are stripped. A terminal or the process's standard
// error is written a line at a time by default, anything else in batches.
// See the Option functions for the defaults and how to change them.
//
// NewWriter does not take ownership of w: Close flushes but does not close w.
func NewWriter(w io.Writer, opts ...Option) *Writer {
	if w == nil {
		panic("lines: NewWriter called with a nil io.Writer")
	}
	c := config{size: DefaultBufferSize, interval: DefaultFlushInterval}
	for _, o := range opts {
		o(&c)
	}
	tty := isTerminal(w)
	lw := &Writer{
		out:      w,
		interval: c.interval,
		lineMode: tty || isStderr(w),
		terminal: tty,
		color:    tty && os.Getenv("NO_COLOR") == "",
		buf:      make([]byte, 0, c.size),
		size:     c.size,
	}
	if c.lineMode != nil {
		lw.lineMode = *c.lineMode
	}
	if c.color != nil {
		lw.color = *c.color
	}
	lw.strip = !tty && !c.allowEsc && !(c.color != nil && *c.color)
	return lw
}

// IsTerminal reports whether NewWriter found the underlying writer to be a
// terminal.
func (w *Writer) IsTerminal() bool { return w.terminal }

// Write writes p as one unit: its bytes are never interleaved with another
// call's. Escape sequences in p are stripped when the destination is not a
// terminal (see AllowEscapes). Write returns len(p) on success, even if
// bytes were stripped, and the sticky error or ErrClosed otherwise. Write
// does not retain p.
func (w *Writer) Write(p []byte) (int, error) {
	if w.strip && bytes.IndexByte(p, esc) >= 0 {
		// Strip outside the lock into a buffer this goroutine owns; p
		// belongs to the caller and must not be modified.
		bp := getBuf()
		*bp = appendStripped((*bp)[:0], p)
		err := w.commit(*bp)
		putBuf(bp)
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if err := w.commit(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Println formats its operands as fmt.Println does and writes the result as
// one unit. Errors are not returned here; they are sticky and reported by
// the next Write, Flush or Close. After Close, Println does nothing.
func (w *Writer) Println(a ...any) { w.println(style{}, a) }

// Printf formats according to a format specifier, as fmt.Printf does, adds
// a newline if the result does not end with one, and writes it as one unit.
// Errors are reported as for Println.
func (w *Writer) Printf(format string, a ...any) { w.printf(style{}, format, a) }

// println formats into a goroutine-owned buffer, before any lock is taken,
// so that String methods may themselves write to w.
func (w *Writer) println(st style, a []any) {
	bp := getBuf()
	b, styled := w.openStyle((*bp)[:0], st)
	b = fmt.Appendln(b, a...)
	w.finish(bp, b, styled)
}

// printf is println for a format; see Printf.
func (w *Writer) printf(st style, format string, a []any) {
	bp := getBuf()
	b, styled := w.openStyle((*bp)[:0], st)
	b = fmt.Appendf(b, format, a...)
	if n := len(b); n == 0 || b[n-1] != '\n' {
		b = append(b, '\n')
	}
	w.finish(bp, b, styled)
}

// openStyle starts a styled line in b if st has a style and w emits them.
func (w *Writer) openStyle(b []byte, st style) ([]byte, bool) {
	if !w.color || st.isZero() {
		return b, false
	}
	return st.appendSGR(b), true
}

// finish completes a formatted, newline-terminated text b that lives in the
// pooled buffer bp, commits it and returns bp to the pool. A styled line is
// reset before its newline so the style does not bleed into the next line;
// text to a non-terminal is stripped in place (stripping only shortens). A
// Writer that emits styles never strips (NewWriter keeps color and strip
// apart), so a styled line, and a Segment's sequences, are never stripped.
func (w *Writer) finish(bp *[]byte, b []byte, styled bool) {
	switch {
	case styled:
		b = append(b[:len(b)-1], sgrReset+"\n"...)
	case w.strip && bytes.IndexByte(b, esc) >= 0:
		b = appendStripped(b[:0], b)
	}
	_ = w.commit(b) // sticky; reported by Write, Flush and Close
	*bp = b
	putBuf(bp)
}

// commit appends p to the buffer as one unit, flushing first if it does not
// fit and writing it straight through if it is larger than the buffer.
// This is the only place output takes the lock; p is fully formatted.
func (w *Writer) commit(p []byte) error {
	if w.noLock {
		_, err := w.out.Write(p)
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if len(p) == 0 { // e.g. a Write of nothing but escape sequences
		return nil
	}
	if len(p) > cap(w.buf)-len(w.buf) {
		if err := w.flushLocked(); err != nil {
			return err
		}
		if len(p) > cap(w.buf) {
			// Larger than the buffer: copying it through in pieces
			// would cost more writes and could split it; write it whole.
			return w.writeLocked(p)
		}
	}
	wasEmpty := len(w.buf) == 0
	w.buf = append(w.buf, p...)
	if w.lineMode {
		return w.flushLocked()
	}
	if wasEmpty {
		w.armTimerLocked()
	}
	return nil
}

// Flush writes any buffered output to the underlying writer. It returns the
// sticky error if a write has failed, and ErrClosed after Close.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.flushLocked()
}

// Close flushes buffered output, stops the background flusher and makes
// later Write and Flush calls return ErrClosed. It returns the sticky write
// error, if any. Closing a closed Writer does nothing and returns nil. Close
// does not close the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	err := w.flushLocked()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.buf = nil
	return err
}

// flushLocked writes the buffer. w.mu must be held.
func (w *Writer) flushLocked() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	if err := w.writeLocked(w.buf); err != nil {
		return err
	}
	w.buf = w.buf[:0]
	return nil
}

// writeLocked makes one write to the underlying writer and records a
// failure as the sticky error. w.mu must be held.
func (w *Writer) writeLocked(p []byte) error {
	n, err := w.out.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = err
	}
	return err
}

// armTimerLocked starts the flush timer when the buffer goes from empty to
// non-empty. A timer, rather than a goroutine that ticks forever, means an
// idle Writer costs nothing and an abandoned one leaks no goroutine; the
// timer's function runs on its own goroutine when it fires, and Close stops
// it. w.mu must be held.
func (w *Writer) armTimerLocked() {
	if w.interval <= 0 || w.timerArmed {
		return
	}
	w.timerArmed = true
	if w.timer == nil {
		w.timer = time.AfterFunc(w.interval, w.timedFlush)
	} else {
		w.timer.Reset(w.interval)
	}
}

// timedFlush is the background flusher. An error it meets is sticky and
// reported by the next Write, Flush or Close.
func (w *Writer) timedFlush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timerArmed = false
	if w.closed {
		return
	}
	_ = w.flushLocked()
}
