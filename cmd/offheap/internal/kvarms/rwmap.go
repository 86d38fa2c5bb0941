package kvarms

import "sync"

func init() {
	Register(Arm{
		Name: "rwmap", GoHeap: true,
		Doc: "a map[string][]byte under one sync.RWMutex, bounded by a count (the budget over the shape's key plus " +
			"value size): a new key over it evicts whichever key the map's iteration meets first",
		New: func(o Options) (Cache, error) {
			return &rwMap{m: make(map[string][]byte, min(o.Entries, 1<<20)), cap: max(o.Entries, 1)}, nil
		},
	})
}

type rwMap struct {
	mu  sync.RWMutex
	m   map[string][]byte
	cap int
}

func (a *rwMap) Set(k, v []byte) {
	v = clone(v)
	a.mu.Lock()
	if _, ok := a.m[string(k)]; !ok && len(a.m) >= a.cap {
		for victim := range a.m {
			delete(a.m, victim)
			break
		}
	}
	a.m[string(k)] = v
	a.mu.Unlock()
}

func (a *rwMap) Get(dst, k []byte) ([]byte, bool) {
	a.mu.RLock()
	v, ok := a.m[string(k)]
	if ok {
		dst = append(dst, v...)
	}
	a.mu.RUnlock()
	return dst, ok
}

func (a *rwMap) Delete(k []byte) {
	a.mu.Lock()
	delete(a.m, string(k))
	a.mu.Unlock()
}

func (a *rwMap) Close() error {
	a.mu.Lock()
	a.m = nil
	a.mu.Unlock()
	return nil
}
