package cache_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/offheap/offheap/cache"
)

// The shapes of fastcache's own benchmarks: 65,536 keys, 4-byte keys and
// values, all goroutines at once (offheap bench -shapes cache runs them
// against the peers).

const benchKeys = 1 << 16

// newBenchCache is a cache of maxBytes, closed at the benchmark's end.
func newBenchCache(b *testing.B, maxBytes int64) *cache.Cache {
	return newBenchCacheOptions(b, cache.Options{MaxBytes: maxBytes})
}

// newBenchCacheOptions is a cache of opts, closed at the benchmark's end.
func newBenchCacheOptions(b *testing.B, opts cache.Options) *cache.Cache {
	c, err := cache.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// zipfTrace is m key numbers below n drawn Zipf(s) from r.
func zipfTrace(r *rand.Rand, s float64, n, m int) []uint32 {
	z := rand.NewZipf(r, s, 1, uint64(n-1))
	t := make([]uint32, m)
	for i := range t {
		t[i] = uint32(z.Uint64())
	}
	return t
}

func benchCache(b *testing.B) *cache.Cache {
	c := newBenchCache(b, 32<<20)
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

// BenchmarkMixed is phuslu/lru's mix: 16-byte keys, 8-byte values, a
// cache of 128K keys half full, Zipf keys, 90% Get and 10% Set.
func BenchmarkMixed(b *testing.B) {
	const n = 1 << 17
	c := newBenchCache(b, 32<<20)
	keys := make([][16]byte, n)
	for i := range keys {
		binary.LittleEndian.PutUint64(keys[i][:], uint64(i)*0x9e3779b97f4a7c15)
		binary.LittleEndian.PutUint64(keys[i][8:], uint64(i))
		if i < n/2 {
			c.Set(keys[i][:], keys[i][8:])
		}
	}
	trace := zipfTrace(rand.New(rand.NewPCG(1, 2)), 1.0001, n, 1<<20)
	for i := range trace {
		trace[i] = trace[i]<<1 | uint32(min(1, i%10)) // one op in ten a Set (bit 0 clear)
	}
	runTrace(b, trace, func(x uint32, dst []byte) []byte {
		k := keys[x>>1][:]
		if x&1 == 0 {
			c.Set(k, k[8:])
			return dst
		}
		dst, _ = c.Get(dst, k)
		return dst
	})
}

// runTrace times op over trace on every goroutine, each from a point of
// its own, with a buffer of its own for Get to append to.
func runTrace(b *testing.B, trace []uint32, op func(x uint32, dst []byte) []byte) {
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var dst []byte
		i := rand.IntN(len(trace))
		for pb.Next() {
			dst = op(trace[i%len(trace)], dst[:0])
			i++
		}
	})
}

// BenchmarkBlock is a block cache: 8K blocks of 4-64 KiB under 16-byte
// keys, read Zipf(1.01) through a 128 MiB cache (the working set 2.2x
// it); a miss Sets the block.
func BenchmarkBlock(b *testing.B) {
	const n = 8 << 10
	c := newBenchCache(b, 128<<20)
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([][16]byte, n)
	sizes := make([]int, n)
	for i := range keys {
		binary.LittleEndian.PutUint64(keys[i][:], uint64(i)*0x9e3779b97f4a7c15)
		sizes[i] = 4<<10 + r.IntN(60<<10)
	}
	block := make([]byte, 64<<10)
	trace := zipfTrace(r, 1.01, n, 1<<16)
	runTrace(b, trace, func(x uint32, dst []byte) []byte {
		dst, ok := c.Get(dst, keys[x][:])
		if !ok {
			c.Set(keys[x][:], block[:sizes[x]])
		}
		return dst
	})
}
