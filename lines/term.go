package lines

import (
	"io"
	"os"

	"golang.org/x/term"
)

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
