//go:build !linux

package bench

import "time"

// ThreadCPU is the calling thread's CPU time, which only Linux says here:
// elsewhere it reports false.
func ThreadCPU() (time.Duration, bool) { return 0, false }
