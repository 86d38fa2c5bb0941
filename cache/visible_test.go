package cache_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cache"
)

// TestProfileSeesEntries checks that the cache's entries appear in its
// heap's allocation profile, attributed to the cache's Set.
func TestProfileSeesEntries(t *testing.T) {
	if checkedBuild {
		t.Skip("a checked heap does not profile")
	}
	h, err := offheap.NewHeap(offheap.Options{ProfileBytes: 4096})
	if err != nil {
		t.Skip(err)
	}
	defer h.Close()
	c, err := cache.New(cache.Options{MaxBytes: 8 << 20, Heap: h})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := make([]byte, 200)
	for i := range 10000 {
		c.Set([]byte{byte(i), byte(i >> 8)}, v)
	}
	var buf bytes.Buffer
	if err := h.WriteProfile(&buf); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("cache.(*Cache).setLocked")) {
		t.Error("the heap's profile names no allocation by the cache's Set")
	}
}

// TestResetAndAll empties a cache with Reset and checks All before and
// after, and that breaking out of All stops it.
func TestResetAndAll(t *testing.T) {
	c := newCache(t, 1<<20)
	for i := range 100 {
		c.Set([]byte{byte(i)}, []byte{byte(i), 1})
	}
	n := 0
	for k, v := range c.All() {
		if len(k) != 1 || !bytes.Equal(v, []byte{k[0], 1}) {
			t.Fatalf("All yielded %v = %v", k, v)
		}
		if n++; n == 10 {
			break
		}
	}
	if n != 10 {
		t.Fatalf("All yielded %d entries before the break, want 10", n)
	}
	c.Reset()
	if c.Len() != 0 || c.Stats().Bytes > 1<<16 {
		t.Fatalf("after Reset: Len %d, Stats %+v", c.Len(), c.Stats())
	}
	for range c.All() {
		t.Fatal("All yielded an entry after Reset")
	}
	c.Set([]byte("after"), []byte("reset"))
	if v, ok := c.Get(nil, []byte("after")); !ok || string(v) != "reset" {
		t.Fatal("Set after Reset was lost")
	}
}
