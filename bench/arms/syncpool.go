package arms

import (
	"math/bits"
	"sync"

	"github.com/offheap/offheap/bench"
)

func init() {
	bench.RegisterArm(bench.Arm{
		Name:    "sync-pool",
		Doc:     "a sync.Pool of *[]byte per power-of-two size class, as the popular byte pools do (Put allocates the *[]byte)",
		Default: true,
		New:     func() (bench.Allocator, error) { return new(syncPool), nil },
	})
}

// poolClasses covers sizes up to 1<<(poolClasses-1); larger requests go to
// make and are dropped on Free.
const poolClasses = 21

// syncPool is the byte pool most Go programs use today: one sync.Pool per
// power of two, holding *[]byte (a pointer, so that Put of the pool's
// element does not allocate an interface box; the *[]byte itself is a new
// allocation per Put, since Free only gets the slice back).
type syncPool struct {
	pools [poolClasses]sync.Pool
}

func poolClass(n int) int { return bits.Len(uint(n - 1)) }

func (p *syncPool) AllocUnzeroed(n int) []byte {
	c := poolClass(n)
	if c >= poolClasses {
		return make([]byte, n)
	}
	if bp, ok := p.pools[c].Get().(*[]byte); ok {
		return (*bp)[:n]
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
	b = b[:c]
	p.pools[poolClass(c)].Put(&b)
}
