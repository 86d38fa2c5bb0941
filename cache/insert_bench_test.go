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
		c := untimedNew(b, 32<<20)
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
		untimedClose(b, c)
	}
}

// untimedNew makes a cache of maxBytes with b's timer stopped.
func untimedNew(b *testing.B, maxBytes int64) *cache.Cache {
	b.StopTimer()
	defer b.StartTimer()
	c, err := cache.New(cache.Options{MaxBytes: maxBytes})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// untimedClose closes c with b's timer stopped.
func untimedClose(b *testing.B, c *cache.Cache) {
	b.StopTimer()
	c.Close()
	b.StartTimer()
}
