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
			fillChurn(c, n)
			latencyLoop(b, n, cacheGet(c), cacheSet(c))
		})
	}
}

// churnKey writes key i, 16 bytes.
func churnKey(k []byte, i int) {
	binary.LittleEndian.PutUint64(k, uint64(i)*0x9E3779B97F4A7C15)
	binary.LittleEndian.PutUint64(k[8:], uint64(i))
}

// BenchmarkGetLatencyFloor sets the big cache's Get tail beside its floor,
// in three arms over BenchmarkChurnLatency's key stream and timing: floor,
// the least memory work a Get of a cache this size does, two dependent
// loads at random in 400 MiB (an index slot, then the record it names) and
// nothing else; gets, the cache's Gets alone; churn, Gets with a Set for
// one op in ten, as the shape runs. A p999 target below the floor's is one
// no design of a hash table that keeps its records apart from its index
// can meet on this machine.
func BenchmarkGetLatencyFloor(b *testing.B) {
	const n = 2_000_000
	words := make([]uint64, 400<<20/8) // pointer-free: the collector never scans it
	for i := range words {
		words[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
	m := uint64(len(words))
	floor := func(_ []byte, x uint64, dst []byte) []byte {
		slot := words[x%m]
		return append(dst[:0], byte(words[(slot>>7)%m])) // the store keeps the loads
	}
	c := newBenchCacheOptions(b, cache.Options{MaxBytes: n * 200})
	fillChurn(c, n)
	b.Run("floor", func(b *testing.B) { latencyLoop(b, n, floor, nil) })
	b.Run("gets", func(b *testing.B) { latencyLoop(b, n, cacheGet(c), nil) })
	b.Run("churn", func(b *testing.B) { latencyLoop(b, n, cacheGet(c), cacheSet(c)) })
}

// fillChurn stores the n keys of the latency benchmarks, values of 64-256 B.
func fillChurn(c *cache.Cache, n int) {
	val := make([]byte, 256)
	var k [16]byte
	for i := range n {
		churnKey(k[:], i)
		c.Set(k[:], val[:64+i%193])
	}
}

// cacheGet and cacheSet are the latency benchmarks' reads and writes of c:
// a Get into dst, and a Set of a new size.
func cacheGet(c *cache.Cache) func(k []byte, _ uint64, dst []byte) []byte {
	return func(k []byte, _ uint64, dst []byte) []byte {
		dst, _ = c.Get(dst[:0], k)
		return dst
	}
}

func cacheSet(c *cache.Cache) func(k []byte, i, j int) {
	val := make([]byte, 256)
	return func(k []byte, i, j int) { c.Set(k, val[:64+(i+j)%193]) }
}

// latencyLoop runs the latency benchmarks' key stream from every goroutine:
// op j draws key i of n + n/4 at random; it is a write (set) for j%10 == 9
// where set is not nil, and a read (get, into a buffer of the goroutine's)
// otherwise, one read in 16 timed. It reports the timed reads' p50, p99
// and p999.
func latencyLoop(b *testing.B, n int, get func(k []byte, x uint64, dst []byte) []byte, set func(k []byte, i, j int)) {
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
			i := int(x % uint64(n+n/4))
			churnKey(k[:], i)
			switch {
			case set != nil && j%10 == 9:
				set(k[:], i, j)
			case j%16 != 0:
				dst = get(k[:], x, dst)
			default:
				t0 := time.Now()
				dst = get(k[:], x, dst)
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
		b.ReportMetric(float64(all[len(all)/2]), "p50-ns")
		b.ReportMetric(float64(all[len(all)*99/100]), "p99-ns")
		b.ReportMetric(float64(all[len(all)*999/1000]), "p999-ns")
	}
}
