//go:build !linux

package offheap

// sharedSelf identifies the calling thread: the key of a drainer (see
// runOnRelease). Off Linux no heap can be made (osmem has no backend), so no
// handle is ever released: 0, which runOnRelease takes for a thread it
// cannot tell apart, is all it needs.
func sharedSelf() uint64 { return 0 }
