package bench

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPU is Linux's CLOCK_THREAD_CPUTIME_ID: the calling thread's
// CPU time, to the nanosecond (getrusage's thread figure moves in ticks).
const clockThreadCPU = 3

// ThreadCPU is the CPU time, user and system, the calling thread has used:
// a shape that locks its goroutine to its thread (runtime.LockOSThread)
// reads what its own work cost, without the collector's and other
// goroutines' time. It reports false where the system cannot say.
func ThreadCPU() (time.Duration, bool) {
	var ts syscall.Timespec
	_, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPU, uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
