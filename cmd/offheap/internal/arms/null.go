package arms

import (
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "null",
		Doc:     "no allocator: Alloc returns (zeroed) a slice of a fixed per-worker buffer; the harness's own cost",
		Default: true,
		New:     func() (bench.Allocator, error) { return &null{}, nil },
	})
}

// nullBuf is the largest block a shape asks for; larger requests use make.
const nullBuf = 256 << 10

// null measures the loop around the allocator. Each worker gets a buffer of
// its own (bench.PerWorker), so workers never write to shared memory.
type null struct{ buf []byte }

func (z *null) Worker(int) bench.Allocator { return &null{buf: make([]byte, nullBuf)} }

func (z *null) AllocUnzeroed(n int) []byte {
	if n > len(z.buf) {
		return make([]byte, n)
	}
	return z.buf[:n:n]
}

func (z *null) Alloc(n int) []byte {
	b := z.AllocUnzeroed(n)
	clear(b)
	return b
}

func (z *null) Free([]byte) {}
