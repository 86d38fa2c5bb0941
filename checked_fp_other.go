//go:build !amd64 && !arm64

package offheap

// framePointers is false where this package has no frame-pointer walker:
// stacks come from runtime.Callers, the slower walk.
const framePointers = false

// fpStack is never called where framePointers is false.
func fpStack(pcs *[stackDepth]uintptr) (int, uint64) { return 0, 0 }
