package cache_test

import (
	"encoding/binary"
	"testing"

	"github.com/offheap/offheap/cache"
)

// The shapes of fastcache's own benchmarks: 65,536 keys, 4-byte keys and
// values, all goroutines at once (offheap bench -shapes cache runs them
// against the peers).

const benchKeys = 1 << 16

func benchCache(b *testing.B) *cache.Cache {
	c, err := cache.New(cache.Options{MaxBytes: 32 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	var k [4]byte
	for i := range benchKeys {
		binary.LittleEndian.PutUint32(k[:], uint32(i))
		c.Set(k[:], k[:])
	}
	return c
}

func BenchmarkSet(b *testing.B) {
	c := benchCache(b)
	b.SetBytes(benchKeys)
	b.RunParallel(func(pb *testing.PB) {
		var k [4]byte
		for pb.Next() {
			for i := range benchKeys {
				binary.LittleEndian.PutUint32(k[:], uint32(i))
				c.Set(k[:], k[:])
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	c := benchCache(b)
	b.SetBytes(benchKeys)
	b.RunParallel(func(pb *testing.PB) {
		var k [4]byte
		var buf []byte
		for pb.Next() {
			for i := range benchKeys {
				binary.LittleEndian.PutUint32(k[:], uint32(i))
				buf, _ = c.Get(buf[:0], k[:])
			}
		}
	})
}

func BenchmarkSetGet(b *testing.B) {
	c := benchCache(b)
	b.SetBytes(2 * benchKeys)
	b.RunParallel(func(pb *testing.PB) {
		var k [4]byte
		var buf []byte
		for pb.Next() {
			for i := range benchKeys {
				binary.LittleEndian.PutUint32(k[:], uint32(i))
				c.Set(k[:], k[:])
			}
			for i := range benchKeys {
				binary.LittleEndian.PutUint32(k[:], uint32(i))
				buf, _ = c.Get(buf[:0], k[:])
			}
		}
	})
}
