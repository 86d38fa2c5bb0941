package lines

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openPTY opens a new pseudo-terminal and returns its master side and its
// slave side, which a Writer sees as a terminal. It unlocks the slave
// (TIOCSPTLCK) and finds its number (TIOCGPTN) as posix_openpt, unlockpt
// and ptsname do, without cgo.
func openPTY() (ptmx, tty *os.File, err error) {
	ptmx, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	var n uint32
	var ioctlErr error
	rc, err := ptmx.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			if ioctlErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioctlErr == nil {
				n, ioctlErr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN)
			}
		})
	}
	if err == nil {
		err = ioctlErr
	}
	if err == nil {
		tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	}
	if err != nil {
		ptmx.Close()
		return nil, nil, err
	}
	return ptmx, tty, nil
}
