package cache_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/offheap/offheap/cache"
)

// BenchmarkChurnLatency is the cache-big shape of cmd/offheap in small: a
// cache of 400 MiB filled with 2M entries of 64-256 B values, then churned
// by all goroutines, 90% Gets and 10% Sets of new sizes over 1.25x the
// keys, so that entries are evicted and segments compacted. It reports the
// p99 and p999 of the Gets (one in 16 timed), per shard count: the tail a
// writer's hold of a shard gives the reads that meet it.
func BenchmarkChurnLatency(b *testing.B) {
	const n = 2_000_000
	for _, shards := range []int{0, 64, 128, 256} {
		b.Run(fmt.Sprint("shards=", shards), func(b *testing.B) {
			c := newBenchCacheOptions(b, cache.Options{MaxBytes: n * 200, Shards: shards})
			val := make([]byte, 256)
			var k [16]byte
			for i := range n {
				churnKey(k[:], i)
				c.Set(k[:], val[:64+i%193])
			}
			var mu sync.Mutex
			var all []int64
			var seed uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				seed++
				x := seed * 0x9E3779B97F4A7C15
				mu.Unlock()
				var k [16]byte
				var lat []int64
				dst := make([]byte, 0, 256)
				for j := 0; pb.Next(); j++ {
					x ^= x << 13 // xorshift: the loop allocates nothing
					x ^= x >> 7
					x ^= x << 17
					i := int(x % (n + n/4))
					churnKey(k[:], i)
					switch {
					case j%10 == 9:
						c.Set(k[:], val[:64+(i+j)%193])
					case j%16 != 0:
						dst, _ = c.Get(dst[:0], k[:])
					default:
						t0 := time.Now()
						dst, _ = c.Get(dst[:0], k[:])
						lat = append(lat, int64(time.Since(t0)))
					}
				}
				mu.Lock()
				all = append(all, lat...)
				mu.Unlock()
			})
			b.StopTimer()
			if len(all) > 1000 {
				slices.Sort(all)
				b.ReportMetric(float64(all[len(all)*99/100]), "p99-ns")
				b.ReportMetric(float64(all[len(all)*999/1000]), "p999-ns")
			}
		})
	}
}

// churnKey writes key i, 16 bytes.
func churnKey(k []byte, i int) {
	binary.LittleEndian.PutUint64(k, uint64(i)*0x9E3779B97F4A7C15)
	binary.LittleEndian.PutUint64(k[8:], uint64(i))
}
