package cache_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cache"
)

// FuzzCache applies a stream of operations to a cache and to a
// map[string][]byte model, and checks that they agree. The stream is split
// between two goroutines by key (even keys to one, odd to the other), each
// with a model of its own keys, so the cache also sees concurrent calls. The
// cache is large enough that nothing is evicted, and the test checks that.
func FuzzCache(f *testing.F) {
	f.Add([]byte{0, 1, 5, 1, 1, 0, 2, 1, 0, 3, 1, 0})
	f.Add([]byte{0, 2, 200, 0, 3, 100, 0, 2, 10, 4, 0, 0, 1, 2, 0, 5, 0, 0})
	f.Add(bytes.Repeat([]byte{0, 7, 33, 0, 8, 64, 2, 7, 0, 1, 8, 0}, 20))
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		f.Skip(err)
	}
	defer h.Close()
	f.Fuzz(func(t *testing.T, ops []byte) {
		c, err := cache.New(cache.Options{MaxBytes: 4 << 20, Shards: 4, Heap: h})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if _, blocks := h.InUse(); blocks != 0 {
				t.Fatalf("%d blocks live in the heap after Close", blocks)
			}
		}()
		models := [2]map[string][]byte{{}, {}}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for g := range 2 {
			wg.Go(func() { errs[g] = runOps(c, ops, g, models[g]) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		want := maps.Clone(models[0])
		maps.Copy(want, models[1])
		if c.Len() != len(want) {
			t.Fatalf("Len = %d, the model has %d", c.Len(), len(want))
		}
		got := map[string][]byte{}
		for k, v := range c.All() {
			got[string(k)] = bytes.Clone(v)
		}
		if !maps.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("All = %q, the model has %q", got, want)
		}
		if st := c.Stats(); st.Evictions != 0 || st.Bytes > st.MaxBytes {
			t.Fatalf("Stats %+v: want no evictions, within MaxBytes", st)
		}
	})
}

// runOps runs, in order, the operations of ops (three bytes each: op, key,
// size) whose key has g's parity, against c and model.
func runOps(c *cache.Cache, ops []byte, g int, model map[string][]byte) error {
	for i := 0; i+2 < len(ops); i += 3 {
		op, kb, size := ops[i]%8, ops[i+1], int(ops[i+2])
		if int(kb)%2 != g {
			continue
		}
		k := []byte(fmt.Sprint(kb))
		if kb == 0 {
			k = nil // the empty key
		}
		v := bytes.Repeat([]byte{byte(i)}, size*int(kb%5))
		switch op {
		case 0, 1:
			c.Set(k, v)
			model[string(k)] = v
		case 2:
			got, ok := c.Get([]byte("dst"), k)
			want, wok := model[string(k)]
			if ok != wok || !bytes.Equal(got, append([]byte("dst"), want...)) {
				return fmt.Errorf("op %d: Get(%q) = %q, %v; the model has %q, %v", i, k, got, ok, want, wok)
			}
		case 3:
			c.Delete(k)
			delete(model, string(k))
		case 4:
			_, want := model[string(k)]
			if c.Has(k) != want {
				return fmt.Errorf("op %d: Has(%q) = %v, the model %v", i, k, !want, want)
			}
		case 5:
			var got []byte
			ok := c.View(k, func(v []byte) { got = bytes.Clone(v) })
			want, wok := model[string(k)]
			if ok != wok || !bytes.Equal(got, want) {
				return fmt.Errorf("op %d: View(%q) = %q, %v; the model has %q, %v", i, k, got, ok, want, wok)
			}
		case 6:
			// Too large: refused, and the old value stays.
			if err := c.TrySet(k, make([]byte, c.MaxEntryBytes())); !errors.Is(err, cache.ErrTooLarge) {
				return fmt.Errorf("op %d: TrySet of MaxEntryBytes: %v", i, err)
			}
		case 7:
			if err := c.TrySetWithTTL(k, v, time.Hour); err != nil {
				return fmt.Errorf("op %d: TrySetWithTTL: %v", i, err)
			}
			model[string(k)] = v
		}
	}
	return nil
}
