package arms

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "sync-pool",
		Doc:     "a sync.Pool per power-of-two size class, as the popular byte pools do, without their per-Put allocation",
		Default: true,
		New:     func() (bench.Allocator, error) { return new(syncPool), nil },
	})
}

// poolClasses covers sizes up to 1<<(poolClasses-1); larger requests go to
// make and are dropped on Free.
const poolClasses = 21

// syncPool is the byte pool most Go programs use today, one sync.Pool per
// power of two, at its best: the popular pools Put a []byte or a new
// *[]byte, which allocates on every Put; this one stores the array's
// pointer (an unsafe.Pointer fits in an interface without a box) and
// rebuilds the slice from the class size, so Get+Put allocates nothing, as
// a sync.Pool of *[64]byte would not.
type syncPool struct {
	pools [poolClasses]sync.Pool
}

func poolClass(n int) int { return bits.Len(uint(n - 1)) }

func (p *syncPool) AllocUnzeroed(n int) []byte {
	c := poolClass(n)
	if c >= poolClasses {
		return make([]byte, n)
	}
	if ptr, ok := p.pools[c].Get().(unsafe.Pointer); ok {
		return unsafe.Slice((*byte)(ptr), 1<<c)[:n]
	}
	return make([]byte, n, 1<<c)
}

// Alloc zeroes what Get returns: a pooled buffer holds old bytes, and the
// arms are compared doing what make does.
func (p *syncPool) Alloc(n int) []byte {
	b := p.AllocUnzeroed(n)
	clear(b)
	return b
}

func (p *syncPool) Free(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 || poolClass(c) >= poolClasses {
		return // not one of ours: leave it to the GC
	}
	p.pools[poolClass(c)].Put(unsafe.Pointer(unsafe.SliceData(b)))
}
