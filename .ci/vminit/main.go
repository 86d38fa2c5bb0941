//go:build linux

// Command vminit is the init (PID 1) of the virtual machine that
// .ci/vm16k.sh boots: it mounts /proc, /sys, /dev and /tmp, runs each test
// binary of testBinaries in turn with the arguments the kernel passes to
// init (those after "--" on the kernel command line), prints the first
// failing binary's exit status (or 0) in a line the script looks for, and
// powers the machine off.
//
// It uses the standard library only, so that it adds nothing to the root
// module's requirements, and never returns: PID 1 exiting panics the kernel.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// testBinaries are where .ci/vm16k.sh puts the test binaries in the
// initramfs: the root package's, the page heap's and the cache package's,
// whose memory figures depend on the page size.
var testBinaries = []string{"/offheap.test", "/pageheap.test", "/cache.test"}

// prefix starts every line vminit prints, so that the script can tell them
// from the kernel's and the tests' output.
const prefix = "offheap-vminit: "

func main() {
	status := run()
	fmt.Printf("%sexit status %d\n", prefix, status)
	syscall.Sync()
	// Powering off ends qemu; should it fail, PID 1 must still not exit.
	err := syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
	fmt.Printf("%spower off: %v\n", prefix, err)
	select {}
}

// run prepares the file systems and runs the tests; it returns their exit
// status, or 255 when they could not be run or died of a signal.
func run() int {
	mounts := []struct{ fstype, dir string }{
		{"proc", "/proc"},
		{"sysfs", "/sys"},
		{"devtmpfs", "/dev"},
		{"tmpfs", "/tmp"},
	}
	for _, m := range mounts {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			fmt.Printf("%smkdir %s: %v\n", prefix, m.dir, err)
			return 255
		}
		if err := syscall.Mount(m.fstype, m.dir, m.fstype, 0, ""); err != nil {
			fmt.Printf("%smount %s on %s: %v\n", prefix, m.fstype, m.dir, err)
			return 255
		}
	}
	fmt.Printf("%spage size %d\n", prefix, os.Getpagesize())
	for _, bin := range testBinaries {
		if status := runTests(bin, os.Args[1:]); status != 0 {
			return status
		}
	}
	return 0
}

// runTests runs the test binary bin with args and returns its exit status,
// or 255 when it could not be run or died of a signal.
func runTests(bin string, args []string) int {
	fmt.Printf("%srunning %s %s\n", prefix, bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/", "HOME=/tmp", "TMPDIR=/tmp"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	default:
		fmt.Printf("%s%s: %v\n", prefix, bin, err)
		return 255
	}
}
