//go:build linux || darwin || freebsd

package shapes

import (
	"syscall"
	"time"
)

// procUsage is the CPU time (user and system) the process has used and
// the page faults it has taken that needed no I/O (first touches of fresh
// memory, mostly), or ok false where the system does not say.
func procUsage() (cpu time.Duration, faults int64, ok bool) {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return 0, 0, false
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano()), int64(r.Minflt), true
}
