package cache_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

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
	stress(t, ops, 512, 1, func(r *rand.Rand, id uint32, key []byte, n int, buf *[]byte) error {
		switch op := r.IntN(100); {
		case op < 40:
			c.Set(key, patterned(id, uint32(n), r.IntN(600)))
		case op < 75:
			return checkedGet(c, id, key, buf)
		case op < 85:
			return checkedView(c, id, key)
		case op < 95:
			c.Delete(key)
		case op < 99:
			c.Has(key)
		default:
			return checkAll(c)
		}
		return nil
	})
	st := c.Stats()
	if st.Bytes > st.MaxBytes {
		t.Errorf("Bytes %d over MaxBytes %d", st.Bytes, st.MaxBytes)
	}
	if st.Evictions == 0 {
		t.Errorf("no evictions: the test does not exercise eviction (%+v)", st)
	}
}

// stress runs op ops times from each of four goroutines, on a key of 4
// bytes, id, drawn from keys with the goroutine's r (seeded by seed), with
// n the op's number and buf the goroutine's read buffer; the first error
// each goroutine's op returns fails t.
func stress(t *testing.T, ops, keys int, seed uint64, op func(r *rand.Rand, id uint32, key []byte, n int, buf *[]byte) error) {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), seed))
			var buf []byte
			key := make([]byte, 4)
			for n := range ops {
				id := uint32(r.IntN(keys))
				binary.LittleEndian.PutUint32(key, id)
				if err := op(r, id, key, n, &buf); err != nil {
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
}

// checkedGet reads key id's value, if any, into buf with Get, and
// checkedView with View, and check it.
func checkedGet(c *cache.Cache, id uint32, key []byte, buf *[]byte) (err error) {
	var ok bool
	if *buf, ok = c.Get((*buf)[:0], key); ok {
		err = checkPatterned(id, *buf)
	}
	return err
}

func checkedView(c *cache.Cache, id uint32, key []byte) (err error) {
	c.View(key, func(v []byte) { err = checkPatterned(id, v) })
	return err
}

// checkAll checks every value All yields.
func checkAll(c *cache.Cache) error {
	for k, v := range c.All() {
		if err := checkPatterned(binary.LittleEndian.Uint32(k), v); err != nil {
			return err
		}
	}
	return nil
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

// TestStressEveryCall is TestStress with the calls it leaves out: values
// of their own blocks (over 4 KiB) beside packed ones, lifetimes that end
// during the run, Reset, SaveTo and LoadFrom, over a cache that evicts and
// compacts, with every value read checked.
func TestStressEveryCall(t *testing.T) {
	c, err := cache.New(cache.Options{MaxBytes: 256 << 10, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var snap bytes.Buffer // a snapshot taken before the run, loaded during it
	for id := range uint32(64) {
		c.Set(binary.LittleEndian.AppendUint32(nil, id), patterned(id, 0, int(id)*100))
	}
	if err := c.SaveTo(&snap); err != nil {
		t.Fatal(err)
	}
	ops := 20000
	if testing.Short() {
		ops = 3000
	}
	stress(t, ops, 256, 2, func(r *rand.Rand, id uint32, key []byte, n int, buf *[]byte) error {
		size := r.IntN(600)
		if r.IntN(8) == 0 {
			size = 4096 + r.IntN(12<<10) // a block of its own
		}
		switch op := r.IntN(1000); {
		case op < 300:
			c.Set(key, patterned(id, uint32(n), size))
		case op < 400:
			c.SetWithTTL(key, patterned(id, uint32(n), size), time.Duration(r.IntN(50))*time.Microsecond)
		case op < 700:
			return checkedGet(c, id, key, buf)
		case op < 800:
			return checkedView(c, id, key)
		case op < 900:
			c.Delete(key)
		case op < 950:
			c.Has(key)
		case op < 980:
			return checkAll(c)
		case op < 990:
			return c.SaveTo(io.Discard)
		case op < 995:
			return c.LoadFrom(bytes.NewReader(snap.Bytes()))
		default:
			c.Reset()
		}
		return nil
	})
	st := c.Stats()
	if st.Bytes > st.MaxBytes {
		t.Errorf("Bytes %d over MaxBytes %d", st.Bytes, st.MaxBytes)
	}
	if st.Evictions == 0 || st.Expirations == 0 {
		t.Errorf("Stats %+v: the run did not both evict and expire, so it does not test both", st)
	}
	if err := checkAll(c); err != nil {
		t.Error(err)
	}
	c.Reset()
	if st := c.Stats(); st.Entries != 0 || c.Len() != 0 {
		t.Errorf("after Reset: Len %d, Stats %+v", c.Len(), st)
	}
}
