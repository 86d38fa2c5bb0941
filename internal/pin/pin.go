// Package pin reaches the runtime's procPin and procUnpin: the one linkname in
// offheap.
//
// procPin disables preemption of the calling goroutine and returns the id of the
// P it runs on, in [0, GOMAXPROCS). Until Unpin, no other goroutine runs on that
// P, so state owned by the P can be read and written with plain loads and
// stores. sync.Pool reaches the same functions the same way; the runtime keeps
// them for outside users (see go.dev/issue/67401).
//
// Between Pin and Unpin the caller must not block, allocate on the Go heap in
// a loop, or call anything that may park the goroutine: keep the pinned section
// a few instructions long.
package pin

import _ "unsafe" // for go:linkname

// Pin pins the calling goroutine to its P and returns the P's id.
//
//go:linkname Pin runtime.procPin
func Pin() int

// Unpin undoes Pin.
//
//go:linkname Unpin runtime.procUnpin
func Unpin()
