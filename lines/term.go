package lines

import (
	"io"
	"os"

	"golang.org/x/term"
)

// isStderr reports whether w is the process's standard error: os.Stderr,
// or an *os.File on descriptor 2. Like isTerminal, it is called once, in
// NewWriter, and does not call Fd.
func isStderr(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	if f == os.Stderr {
		return true
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	two := false
	if err := rc.Control(func(fd uintptr) { two = fd == 2 }); err != nil {
		return false
	}
	return two
}

// isTerminal reports whether w refers to a terminal. It is called once, in
// NewWriter, never on the output path.
//
// For an *os.File it goes through SyscallConn rather than Fd: Fd puts the
// file into blocking mode, which would take a pipe off the runtime's poller
// and make every flush block an OS thread.
func isTerminal(w io.Writer) bool {
	switch f := w.(type) {
	case *os.File:
		rc, err := f.SyscallConn()
		if err != nil {
			return false
		}
		tty := false
		if err := rc.Control(func(fd uintptr) { tty = term.IsTerminal(int(fd)) }); err != nil {
			return false
		}
		return tty
	case interface{ Fd() uintptr }:
		return term.IsTerminal(int(f.Fd()))
	}
	return false
}
