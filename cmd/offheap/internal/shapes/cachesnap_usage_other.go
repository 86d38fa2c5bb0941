//go:build !(linux || darwin || freebsd)

package shapes

import "time"

// procUsage says nothing on this system.
func procUsage() (cpu time.Duration, faults int64, ok bool) { return 0, 0, false }
