package cache_test

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/offheap/offheap/cache"
)

// patterned and checkPatterned are the package's own (pattern_test.go).
var patterned, checkPatterned = cache.Patterned, cache.CheckPatterned

// TestStress runs Set, Get, View, Delete, Has and All from several
// goroutines over a cache small enough to evict, checking every value read.
func TestStress(t *testing.T) {
	c, err := cache.New(cache.Options{MaxBytes: 128 << 10, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ops := 40000
	if testing.Short() {
		ops = 20000
	}
	const keys = 512
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			var buf []byte
			key := make([]byte, 4)
			for n := range ops {
				id := uint32(r.IntN(keys))
				binary.LittleEndian.PutUint32(key, id)
				var err error
				switch op := r.IntN(100); {
				case op < 40:
					c.Set(key, patterned(id, uint32(n), r.IntN(600)))
				case op < 75:
					var ok bool
					if buf, ok = c.Get(buf[:0], key); ok {
						err = checkPatterned(id, buf)
					}
				case op < 85:
					c.View(key, func(v []byte) { err = checkPatterned(id, v) })
				case op < 95:
					c.Delete(key)
				case op < 99:
					c.Has(key)
				default:
					for k, v := range c.All() {
						if err = checkPatterned(binary.LittleEndian.Uint32(k), v); err != nil {
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := c.Stats()
	if st.Bytes > st.MaxBytes {
		t.Errorf("Bytes %d over MaxBytes %d", st.Bytes, st.MaxBytes)
	}
	if st.Evictions == 0 {
		t.Errorf("no evictions: the test does not exercise eviction (%+v)", st)
	}
}

// TestCloseRacing closes a cache while other goroutines use it: none may
// fault, and after Close every call behaves as on a closed cache.
func TestCloseRacing(t *testing.T) {
	for range 20 {
		c, err := cache.New(cache.Options{MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 4 {
			wg.Go(func() {
				<-start
				key := make([]byte, 4)
				for n := range 2000 {
					binary.LittleEndian.PutUint32(key, uint32(n%300))
					switch (n + g) % 6 {
					case 0:
						c.Set(key, patterned(uint32(n%300), uint32(n), n%200))
					case 1:
						if v, ok := c.Get(nil, key); ok {
							if err := checkPatterned(uint32(n%300), v); err != nil {
								t.Error(err)
							}
						}
					case 2:
						c.Delete(key)
					case 3:
						c.View(key, func([]byte) {})
					case 4:
						for range c.All() {
						}
					case 5:
						c.Stats()
						c.Len()
					}
				}
			})
		}
		close(start)
		c.Close()
		wg.Wait()
		if c.Len() != 0 {
			t.Fatal("Len after Close")
		}
	}
}
