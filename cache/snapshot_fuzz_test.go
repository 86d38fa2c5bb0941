package cache_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cache"
)

// FuzzLoad loads arbitrary bytes as a snapshot, through LoadFrom and
// through LoadFromFile, into a cache holding one entry: each load ends in
// nil or an ErrSnapshot, never a panic, and leaves a cache whose entries
// agree with its Len, that takes new entries, and that closes with
// nothing of the heap left in use. The seeds are whole snapshots, plain and
// compressed, which must load.
func FuzzLoad(f *testing.F) {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		f.Skip(err)
	}
	defer h.Close()
	src, err := cache.New(cache.Options{MaxBytes: 1 << 20, Shards: 2, Heap: h})
	if err != nil {
		f.Fatal(err)
	}
	for i := range 40 {
		src.Set(fmt.Appendf(nil, "key %d", i), bytes.Repeat([]byte{byte(i)}, i*7)) // repetitive: compressed
	}
	var buf bytes.Buffer
	if err := src.SaveTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	src.Reset()
	src.Set([]byte("k"), []byte("v"))
	buf.Reset()
	if err := src.SaveTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	if err := src.Close(); err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, snap []byte) {
		path := filepath.Join(dir, "snap")
		if err := os.WriteFile(path, snap, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, load := range []struct {
			name string
			f    func(c *cache.Cache) error
		}{
			{"LoadFrom", func(c *cache.Cache) error { return c.LoadFrom(bytes.NewReader(snap)) }},
			{"LoadFromFile", func(c *cache.Cache) error { return c.LoadFromFile(path) }},
		} {
			c, err := cache.New(cache.Options{MaxBytes: 1 << 20, Shards: 2, Heap: h})
			if err != nil {
				t.Fatal(err)
			}
			c.Set([]byte("before"), []byte("the load"))
			if err := load.f(c); err != nil && !errors.Is(err, cache.ErrSnapshot) {
				t.Errorf("%s: %v, want nil or an ErrSnapshot", load.name, err)
			}
			n := 0
			for k, v := range c.All() {
				if got, ok := c.Get(nil, k); !ok || !bytes.Equal(got, v) {
					t.Errorf("%s: All gives %q for %q, Get %q %v", load.name, v, k, got, ok)
				}
				n++
			}
			if n != c.Len() {
				t.Errorf("%s: All gives %d entries, Len %d", load.name, n, c.Len())
			}
			c.Set([]byte("after"), []byte("the load"))
			if got, ok := c.Get(nil, []byte("after")); !ok || string(got) != "the load" {
				t.Errorf("%s: a Set after the load: %q %v", load.name, got, ok)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if _, blocks := h.InUse(); blocks != 0 {
				t.Fatalf("%s: %d blocks in use after Close", load.name, blocks)
			}
		}
	})
}
