//go:build !amd64 && !arm64

package callstack

// FramePointers is false where this package has no frame-pointer walker:
// stacks come from runtime.Callers, the slower walk.
const FramePointers = false

// Walk walks nothing where FramePointers is false: Fill takes the frames
// from runtime.Callers.
func Walk(pcs *[Depth]uintptr) (int, uint64) { return 0, 0 }
