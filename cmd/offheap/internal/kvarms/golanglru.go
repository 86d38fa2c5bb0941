package kvarms

import lru "github.com/hashicorp/golang-lru/v2"

func init() {
	Register(Arm{
		Name: "golang-lru", Peer: true, GoHeap: true, Evicts: true,
		Doc: "hashicorp/golang-lru/v2 v2.0.7: one map and a linked list under one mutex, Go strings and []byte values, " +
			"bounded by a count (the budget over the shape's key plus value size); evicts the least recently used",
		New: func(o Options) (Cache, error) {
			c, err := lru.New[string, []byte](max(o.Entries, 1))
			if err != nil {
				return nil, err
			}
			return &lruArm{c}, nil
		},
	})
}

type lruArm struct{ c *lru.Cache[string, []byte] }

func (a *lruArm) Set(k, v []byte) { a.c.Add(string(k), clone(v)) }

func (a *lruArm) Get(dst, k []byte) ([]byte, bool) {
	v, ok := a.c.Get(str(k))
	if !ok {
		return dst, false
	}
	return append(dst, v...), true
}

func (a *lruArm) Delete(k []byte) { a.c.Remove(str(k)) }
func (a *lruArm) Close() error    { a.c.Purge(); return nil }
