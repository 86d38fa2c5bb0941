package cache_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/offheap/offheap/cache"
)

func newCache(t testing.TB, maxBytes int64) *cache.Cache {
	t.Helper()
	c, err := cache.New(cache.Options{MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSetGetDelete(t *testing.T) {
	c := newCache(t, 1<<20)
	for i := range 1000 {
		c.Set(fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{byte(i)}, i%300))
	}
	if c.Len() != 1000 {
		t.Fatalf("Len = %d, want 1000", c.Len())
	}
	for i := range 1000 {
		v, ok := c.Get([]byte("x"), fmt.Appendf(nil, "k%d", i))
		if !ok || !bytes.Equal(v, append([]byte("x"), bytes.Repeat([]byte{byte(i)}, i%300)...)) {
			t.Fatalf("Get k%d = %q, %v", i, v, ok)
		}
	}
	for i := range 500 {
		c.Delete(fmt.Appendf(nil, "k%d", i))
	}
	if c.Len() != 500 {
		t.Fatalf("Len after deletes = %d, want 500", c.Len())
	}
	if _, ok := c.Get(nil, []byte("k1")); ok {
		t.Fatal("a deleted key was found")
	}
	// Replace with the same size (in place) and another size.
	c.Set([]byte("k600"), bytes.Repeat([]byte{7}, 600%300))
	c.Set([]byte("k601"), []byte("short"))
	if v, _ := c.Get(nil, []byte("k601")); string(v) != "short" {
		t.Fatalf("Get after replacing = %q", v)
	}
}

func TestEvictionBound(t *testing.T) {
	c := newCache(t, 1<<20)
	v := make([]byte, 100)
	for i := range 100000 {
		c.Set(fmt.Appendf(nil, "key-%d", i), v)
	}
	st := c.Stats()
	if st.Bytes > st.MaxBytes {
		t.Fatalf("Bytes %d over MaxBytes %d", st.Bytes, st.MaxBytes)
	}
	if st.Evictions == 0 || st.Entries == 0 {
		t.Fatalf("Stats %+v: want evictions and entries", st)
	}
}

func TestBadInput(t *testing.T) {
	c := newCache(t, 1<<20)
	c.Set([]byte("keep"), []byte("me"))
	if err := c.TrySet(make([]byte, 70000), nil); !errors.Is(err, cache.ErrTooLarge) {
		t.Fatalf("TrySet of a 70000-byte key: %v, want ErrTooLarge", err)
	}
	if err := c.TrySet([]byte("big"), make([]byte, c.MaxEntryBytes())); !errors.Is(err, cache.ErrTooLarge) ||
		!strings.Contains(err.Error(), "a larger Options.MaxBytes") {
		t.Fatalf("TrySet of a value of MaxEntryBytes: %v, want ErrTooLarge and the way out", err)
	}
	if err := c.TrySet([]byte("keep"), make([]byte, 1<<20)); !errors.Is(err, cache.ErrTooLarge) {
		t.Fatalf("TrySet replacing with a value too large: %v, want ErrTooLarge", err)
	}
	if v, ok := c.Get(nil, []byte("keep")); !ok || string(v) != "me" {
		t.Fatalf("the entry was lost: %q %v", v, ok)
	}
	c.Set(nil, []byte("nil key"))
	if v, ok := c.Get(nil, []byte{}); !ok || string(v) != "nil key" {
		t.Fatalf("nil key: %q %v", v, ok)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.TrySet([]byte("a"), nil); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("TrySet after Close: %v", err)
	}
	if _, ok := c.Get(nil, []byte("keep")); ok {
		t.Fatal("Get after Close found a value")
	}
	c.Delete([]byte("keep"))
	if c.Len() != 0 {
		t.Fatal("Len after Close")
	}
	if err := c.Close(); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestKeyLengths holds MaxEntryBytes' word on keys: about 64 KiB from a
// MaxBytes of 1 MiB with the default shards, about 1 KiB at MinBytes, and
// a longer key refused with ErrTooLarge, the other entries kept.
func TestKeyLengths(t *testing.T) {
	for _, tc := range []struct {
		maxBytes int64
		fits     int
	}{{1 << 20, 65000}, {cache.MinBytes, 960}} {
		c, err := cache.New(cache.Options{MaxBytes: tc.maxBytes})
		if err != nil {
			t.Fatal(err)
		}
		c.Set([]byte("other"), []byte("v"))
		if err := c.TrySet(make([]byte, tc.fits), []byte("v")); err != nil {
			t.Errorf("MaxBytes %d: a key of %d bytes: %v", tc.maxBytes, tc.fits, err)
		}
		if err := c.TrySet(make([]byte, 2*tc.fits), []byte("v")); !errors.Is(err, cache.ErrTooLarge) {
			t.Errorf("MaxBytes %d: a key of %d bytes: %v, want ErrTooLarge", tc.maxBytes, 2*tc.fits, err)
		}
		if _, ok := c.Get(nil, []byte("other")); !ok {
			t.Errorf("MaxBytes %d: a refused key lost another entry", tc.maxBytes)
		}
		c.Close()
	}
}

// TestNewLargeMaxBytes: a MaxBytes near math.MaxInt64, a bound no process
// reaches, makes a cache like any other, each shard's share the larger for
// it (the share's arithmetic once wrapped, refusing 1<<62 and shrinking
// math.MaxInt64's).
func TestNewLargeMaxBytes(t *testing.T) {
	last := 0
	for _, n := range []int64{1 << 40, 1 << 60, 1 << 62, math.MaxInt64} {
		c, err := cache.New(cache.Options{MaxBytes: n})
		if err != nil {
			t.Fatalf("New(MaxBytes %d): %v", n, err)
		}
		if m := c.MaxEntryBytes(); m <= last || int64(m) < n/1024 {
			t.Errorf("MaxBytes %d: MaxEntryBytes %d, want above %d and n/1024", n, m, last)
		}
		last = c.MaxEntryBytes()
		c.Set([]byte("k"), make([]byte, 100))
		if _, ok := c.Get(nil, []byte("k")); !ok {
			t.Errorf("MaxBytes %d: the value just set is missing", n)
		}
		c.Close()
	}
}

// TestNewSmallMaxBytes makes caches of the smallest budgets, where the
// default shard count is 1, and stores and reads a value in each.
func TestNewSmallMaxBytes(t *testing.T) {
	for _, n := range []int64{cache.MinBytes, cache.MinBytes + 1, 100 << 10, 256<<10 - 1, 256 << 10, 1 << 20} {
		c, err := cache.New(cache.Options{MaxBytes: n})
		if err != nil {
			t.Fatalf("New(MaxBytes %d): %v", n, err)
		}
		c.Set([]byte("k"), make([]byte, 100))
		if _, ok := c.Get(nil, []byte("k")); !ok {
			t.Errorf("MaxBytes %d: the value just set is missing", n)
		}
		c.Close()
	}
}
