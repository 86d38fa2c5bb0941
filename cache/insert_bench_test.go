package cache_test

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/offheap/offheap/cache"
)

// BenchmarkInsert sets 65,536 new 4-byte keys into a new cache from two
// goroutines: the first pass of fastcache's Set shape.
func BenchmarkInsert(b *testing.B) {
	for range b.N {
		b.StopTimer()
		c, err := cache.New(cache.Options{MaxBytes: 32 << 20})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				var k [4]byte
				for i := g; i < benchKeys; i += 2 {
					binary.LittleEndian.PutUint32(k[:], uint32(i))
					c.Set(k[:], k[:])
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		c.Close()
		b.StartTimer()
	}
}
