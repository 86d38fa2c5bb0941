package kvarms

import "github.com/coocood/freecache"

func init() {
	Register(Arm{
		Name: "freecache", Peer: true, GoHeap: true, Evicts: true,
		Doc: "coocood/freecache v1.2.7: 256 segments, each a pointer-free ring buffer and slot index on the Go heap, " +
			"the whole budget made up front; an entry may not exceed 1/1024 of it",
		New: func(o Options) (Cache, error) { return &freeArm{freecache.NewCache(o.MaxBytes)}, nil },
	})
}

type freeArm struct{ c *freecache.Cache }

func (a *freeArm) Set(k, v []byte) { _ = a.c.Set(k, v, 0) }

// Get reads into dst's spare capacity, which freecache's GetWithBuf fills
// without allocating when the value fits.
func (a *freeArm) Get(dst, k []byte) ([]byte, bool) {
	spare := dst[len(dst):]
	v, err := a.c.GetWithBuf(k, spare)
	if err != nil {
		return dst, false
	}
	if len(v) <= cap(spare) {
		return dst[:len(dst)+len(v)], true
	}
	return append(dst, v...), true
}

func (a *freeArm) Delete(k []byte) { a.c.Del(k) }
func (a *freeArm) Close() error    { a.c.Clear(); return nil }
