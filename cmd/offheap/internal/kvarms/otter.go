package kvarms

import "github.com/maypok86/otter/v2"

func init() {
	Register(Arm{
		Name: "otter", Peer: true, GoHeap: true, Evicts: true,
		Doc: "maypok86/otter v2.4.0: a concurrent hash table of Go strings and []byte values, weighed by key plus " +
			"value bytes against the budget; evicts by W-TinyLFU",
		New: func(o Options) (Cache, error) {
			c, err := otter.New(&otter.Options[string, []byte]{
				MaximumWeight:   uint64(o.MaxBytes),
				Weigher:         func(k string, v []byte) uint32 { return uint32(len(k) + len(v)) },
				InitialCapacity: min(o.Entries, 1<<20),
			})
			if err != nil {
				return nil, err
			}
			return &otterArm{c}, nil
		},
	})
}

type otterArm struct{ c *otter.Cache[string, []byte] }

func (a *otterArm) Set(k, v []byte) { a.c.Set(string(k), clone(v)) }

func (a *otterArm) Get(dst, k []byte) ([]byte, bool) {
	v, ok := a.c.GetIfPresent(str(k))
	if !ok {
		return dst, false
	}
	return append(dst, v...), true
}

func (a *otterArm) Delete(k []byte) { a.c.Invalidate(str(k)) }

func (a *otterArm) Close() error {
	a.c.InvalidateAll()
	a.c.StopAllGoroutines()
	return nil
}
