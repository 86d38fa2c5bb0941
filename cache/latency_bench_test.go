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

// BenchmarkGetLatencyFloor sets the big cache's Get tail beside its floor,
// in three arms over the same key stream as BenchmarkChurnLatency (one op
// in 16 timed, all goroutines): floor, the least memory work a Get of a
// cache this size does, two dependent loads at random in 400 MiB (an index
// slot, then the record it names) and nothing else; gets, the cache's Gets
// alone; churn, Gets with a Set for one op in ten, as the shape runs. A
// p999 target below the floor's is one no design of a hash table that
// keeps its records apart from its index can meet on this machine.
func BenchmarkGetLatencyFloor(b *testing.B) {
	const n = 2_000_000
	words := make([]uint64, 400<<20/8) // pointer-free: the collector never scans it
	for i := range words {
		words[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
	c := newBenchCacheOptions(b, cache.Options{MaxBytes: n * 200})
	val := make([]byte, 256)
	var k [16]byte
	for i := range n {
		churnKey(k[:], i)
		c.Set(k[:], val[:64+i%193])
	}
	for _, arm := range []string{"floor", "gets", "churn"} {
		b.Run(arm, func(b *testing.B) {
			var mu sync.Mutex
			var all []int64
			var seed uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				seed++
				x := seed * 0x9E3779B97F4A7C15
				mu.Unlock()
				words, c := words, c // hoisted
				m := uint64(len(words))
				var k [16]byte
				var lat []int64
				var acc uint64
				dst := make([]byte, 0, 256)
				for j := 0; pb.Next(); j++ {
					x ^= x << 13 // xorshift: the loop allocates nothing
					x ^= x >> 7
					x ^= x << 17
					i := int(x % (n + n/4))
					var t0 time.Time
					timed := j%16 == 0
					if timed {
						t0 = time.Now()
					}
					switch {
					case arm == "floor":
						slot := words[x%m]
						acc += words[(slot>>7)%m]
					case arm == "churn" && j%10 == 9:
						churnKey(k[:], i)
						c.Set(k[:], val[:64+(i+j)%193])
						continue
					default:
						churnKey(k[:], i)
						dst, _ = c.Get(dst[:0], k[:])
					}
					if timed {
						lat = append(lat, int64(time.Since(t0)))
					}
				}
				mu.Lock()
				all = append(all, lat...)
				floorSink += acc
				mu.Unlock()
			})
			b.StopTimer()
			if len(all) > 1000 {
				slices.Sort(all)
				b.ReportMetric(float64(all[len(all)/2]), "p50-ns")
				b.ReportMetric(float64(all[len(all)*99/100]), "p99-ns")
				b.ReportMetric(float64(all[len(all)*999/1000]), "p999-ns")
			}
		})
	}
}

// floorSink keeps the floor arm's loads.
var floorSink uint64
