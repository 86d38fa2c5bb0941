//go:build !linux

package lines

import (
	"errors"
	"os"
)

// openPTY is implemented on Linux only; elsewhere the terminal tests skip.
func openPTY() (ptmx, tty *os.File, err error) {
	return nil, nil, errors.ErrUnsupported
}
