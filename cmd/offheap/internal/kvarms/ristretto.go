package kvarms

import "github.com/dgraph-io/ristretto/v2"

func init() {
	Register(Arm{
		Name: "ristretto", Peer: true, GoHeap: true, Evicts: true,
		Doc: "dgraph-io/ristretto v2.4.2: a sharded map of Go []byte values, costed at key plus value bytes " +
			"against the budget (its own cost per item added); admits and evicts by TinyLFU, Sets buffered",
		New: func(o Options) (Cache, error) {
			c, err := ristretto.NewCache(&ristretto.Config[string, []byte]{
				NumCounters: int64(max(o.Entries, 100)) * 10, // ristretto's advice: 10x the items
				MaxCost:     int64(o.MaxBytes),
				BufferItems: 64,
			})
			if err != nil {
				return nil, err
			}
			return &ristrettoArm{c}, nil
		},
	})
}

type ristrettoArm struct {
	c *ristretto.Cache[string, []byte]
}

func (a *ristrettoArm) Set(k, v []byte) { a.c.Set(string(k), clone(v), int64(len(k)+len(v))) }

func (a *ristrettoArm) Get(dst, k []byte) ([]byte, bool) {
	v, ok := a.c.Get(str(k))
	if !ok {
		return dst, false
	}
	return append(dst, v...), true
}

func (a *ristrettoArm) Delete(k []byte) { a.c.Del(str(k)) }
func (a *ristrettoArm) Close() error    { a.c.Close(); return nil }

// Settle waits for the buffered Sets to be applied (or dropped).
func (a *ristrettoArm) Settle() { a.c.Wait() }
