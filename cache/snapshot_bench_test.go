package cache_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

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
