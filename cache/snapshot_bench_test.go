package cache_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cache"
)

func filled(b *testing.B, n, vlen int) *cache.Cache {
	c, err := cache.New(cache.Options{MaxBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	v := make([]byte, vlen)
	for i := range n {
		c.Set(fmt.Appendf(nil, "key-%012d", i), v)
	}
	return c
}

// BenchmarkSaveTo writes a snapshot of 100k entries of 100-byte values.
func BenchmarkSaveTo(b *testing.B) {
	c := filled(b, 100000, 100)
	b.ResetTimer()
	for range b.N {
		if err := c.SaveTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadFrom loads a snapshot of 100k entries of 100-byte values
// into an empty cache.
func BenchmarkLoadFrom(b *testing.B) {
	c := filled(b, 100000, 100)
	var buf bytes.Buffer
	c.SaveTo(&buf)
	d, err := cache.New(cache.Options{MaxBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ResetTimer()
	for range b.N {
		d.Reset()
		if err := d.LoadFrom(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadFromNew loads the snapshot of BenchmarkLoadFrom into a new
// cache each time, whose segments are fresh memory, as a process loading
// its cache at start has.
func BenchmarkLoadFromNew(b *testing.B) {
	c := filled(b, 100000, 100)
	var buf bytes.Buffer
	c.SaveTo(&buf)
	for range b.N {
		d := untimedNew(b, 1<<30)
		if err := d.LoadFrom(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
		untimedClose(b, d)
	}
}

// snapPattern is random bytes that the file benchmarks' values are sliced
// from, as cmd/offheap's cache-snapshot shape slices its values.
var snapPattern = func() []byte {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 1<<17)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// snapFile saves a cache of n entries of 16-byte keys and 64-256 byte
// values to a file in a temporary directory and returns its path and the
// MaxBytes the cache had.
func snapFile(b *testing.B, n int) (string, int64) {
	maxBytes := int64(max(64<<20, n*(16+256)*2))
	c := untimedNew(b, maxBytes)
	defer c.Close()
	for i := range n {
		h := uint64(i) * 0x9E3779B97F4A7C15
		vl := 64 + int((h>>29)%193)
		off := (i * 64) % (len(snapPattern) - vl + 1)
		c.Set(fmt.Appendf(nil, "%016x", i), snapPattern[off:off+vl])
	}
	path := filepath.Join(b.TempDir(), "snap")
	if err := c.SaveToFile(path); err != nil {
		b.Fatal(err)
	}
	return path, maxBytes
}

// BenchmarkSaveToFile saves 1M entries (cmd/offheap's cache-snapshot
// shape) to a file.
func BenchmarkSaveToFile(b *testing.B) {
	path, maxBytes := snapFile(b, 1<<20)
	c := untimedNew(b, maxBytes)
	defer c.Close()
	if err := c.LoadFromFile(path); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := c.SaveToFile(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadFromFile loads the snapshot of BenchmarkSaveToFile into a
// new cache each time, New included, as the shape times it.
func BenchmarkLoadFromFile(b *testing.B) {
	path, maxBytes := snapFile(b, 1<<20)
	var cs []*cache.Cache
	b.ResetTimer()
	for range b.N {
		c, err := cache.New(cache.Options{MaxBytes: maxBytes})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.LoadFromFile(path); err != nil {
			b.Fatal(err)
		}
		cs = append(cs, c)
		if len(cs) == 4 { // closed in fours, with the timer stopped
			b.StopTimer()
			for _, c := range cs {
				c.Close()
			}
			cs = cs[:0]
			b.StartTimer()
		}
	}
	b.StopTimer()
	for _, c := range cs {
		c.Close()
	}
}

// BenchmarkLoadFromFileWarm loads the snapshot of BenchmarkSaveToFile into
// a new cache each time, on one heap that keeps freed pages mapped: memory
// earlier loads faulted in, as fastcache's chunks are reused from cache to
// cache. Against BenchmarkLoadFromFile, it tells the per-entry work from
// the first touches of fresh memory.
func BenchmarkLoadFromFileWarm(b *testing.B) {
	path, maxBytes := snapFile(b, 1<<20)
	h, err := offheap.NewHeap(offheap.Options{ReleaseDelay: 200 * 365 * 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ResetTimer()
	for range b.N {
		c, err := cache.New(cache.Options{MaxBytes: maxBytes, Heap: h})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.LoadFromFile(path); err != nil {
			b.Fatal(err)
		}
		untimedClose(b, c)
	}
}
