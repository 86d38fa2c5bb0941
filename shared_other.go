//go:build !linux

package offheap

import "runtime"

// sharedSelf identifies the calling goroutine: the key of a drainer (see
// runOnRelease). Without a cheap thread id, it is the goroutine id, read from
// the header line of runtime.Stack ("goroutine 18 [running]:"), or 0 if it
// cannot be read. It costs microseconds, and is called only on final
// releases of handles with a callback.
func sharedSelf() uint64 { return goroutineID() }

// goroutineID returns the calling goroutine's id, or 0.
func goroutineID() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	const prefix = "goroutine "
	if n <= len(prefix) || string(buf[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range buf[len(prefix):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
