//go:build linux

package offheap

import "golang.org/x/sys/unix"

// sharedSelf identifies the calling thread: the key of a drainer, which is
// locked to its thread while it drains (see runOnRelease).
func sharedSelf() uint64 { return uint64(unix.Gettid()) }
