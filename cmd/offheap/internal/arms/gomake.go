package arms

import (
	"runtime"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "go-make",
		Doc:     "make([]byte, n); Free is a no-op and the garbage collector frees",
		Default: true,
		New:     func() (bench.Allocator, error) { return goMake{}, nil },
	})
}

// goMake allocates on the Go heap. The slice escapes (it is returned through
// an interface), so make cannot be optimized away or moved to the stack; the
// shapes hold it until they "free" it, and Free keeps it alive to that point.
type goMake struct{}

func (goMake) Alloc(n int) []byte { return make([]byte, n) }

func (goMake) Free(b []byte) { runtime.KeepAlive(b) }

// GoHeap marks the arm's memory as the Go heap's (bench.GoHeap).
func (goMake) GoHeap() {}
