package cache

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// lockFreeChurn runs a writer that replaces and deletes small values, so
// that records die, segments are evicted, compacted and reused and tables
// rebuilt, against readers calling read for each key; it returns how many
// reads found a value and how many of those were wrong.
func lockFreeChurn(t *testing.T, ops int, read func(c *Cache, k, buf []byte) ([]byte, bool)) (found, bad int64) {
	c, err := New(Options{MaxBytes: MinBytes, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.lockFree {
		t.Fatal("a cache on its own heap does not read lock-free in this build")
	}
	const keys = 1500
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		r := rand.New(rand.NewPCG(1, 2))
		k := make([]byte, 4)
		for n := range ops {
			id := uint32(r.IntN(keys))
			binary.LittleEndian.PutUint32(k, id)
			if r.IntN(8) == 0 {
				c.Delete(k)
			} else {
				c.Set(k, patterned(id, uint32(n), r.IntN(48)))
			}
		}
	})
	var nFound, nBad atomic.Int64
	for g := range 2 {
		wg.Go(func() {
			k := make([]byte, 4)
			var buf []byte
			for i := uint32(g); !done.Load(); i++ {
				id := i % keys
				binary.LittleEndian.PutUint32(k, id)
				var ok bool
				if buf, ok = read(c, k, buf[:0]); ok {
					nFound.Add(1)
					if checkPatterned(id, buf) != nil {
						nBad.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	return nFound.Load(), nBad.Load()
}

// TestLockFreeReads: Gets that take no lock, racing a writer that keeps
// changing the shard under them, return only whole values of their key.
// The positive control reads the same way without checking the shard's
// seq afterwards (peek alone), and must see values torn or not its key's:
// the churn does reach the memory the reads are in.
func TestLockFreeReads(t *testing.T) {
	if !lockFreeBuild {
		t.Skip("race and checked builds read under the lock")
	}
	ops := 100000
	if testing.Short() {
		ops = 30000
	}
	found, bad := lockFreeChurn(t, ops, func(c *Cache, k, buf []byte) ([]byte, bool) {
		return c.Get(buf, k)
	})
	if bad != 0 || found == 0 {
		t.Fatalf("Get without the lock: %d of %d values found were wrong", bad, found)
	}
	// The control: peek's reads kept whatever the seq says.
	var controlBad, controlFound int64
	for try := 0; try < 10 && controlBad == 0; try++ {
		f, b := lockFreeChurn(t, ops, func(c *Cache, k, buf []byte) ([]byte, bool) {
			h := c.hash(k)
			out, r := c.peek(c.shardOf(h), h, k, buf, true)
			return out, r == peekHit
		})
		controlFound += f
		controlBad += b
	}
	if controlBad == 0 {
		t.Fatalf("control: %d reads without the seq check found no wrong value: the churn does not reach the reads", controlFound)
	}
	t.Logf("Get: %d values, all right; control without the seq check: %d of %d wrong", found, controlBad, controlFound)
}
