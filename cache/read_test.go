package cache

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// lockFreeChurn runs a writer that replaces and deletes small values, so
// that records die, segments are evicted, compacted and reused and tables
// rebuilt, against readers calling read for each key; it returns how many
// reads found a value and how many of those were wrong. Values are 8 to
// 8+extra bytes: with extra 48 they live in the segments, with 600 most
// of them in blocks of their own (a shard of 1 KiB segments here).
func lockFreeChurn(t *testing.T, ops, extra int, read func(c *Cache, k, buf []byte) ([]byte, bool)) (found, bad int64) {
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
				c.Set(k, patterned(id, uint32(n), r.IntN(extra)))
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
// changing the shard under them, return only whole values of their key,
// from a segment or from a block of their own. The positive control reads
// the same way without checking the shard's seq after the copy (peek
// alone; for a block, the copy made once the address is known good), and
// must see values torn or not its key's: the churn does reach the memory
// the reads are in.
func TestLockFreeReads(t *testing.T) {
	if !lockFreeBuild {
		t.Skip("race and checked builds read under the lock")
	}
	ops := 100000
	if testing.Short() {
		ops = 30000
	}
	for _, extra := range []int{48, 600} {
		found, bad := lockFreeChurn(t, ops, extra, func(c *Cache, k, buf []byte) ([]byte, bool) {
			return c.Get(buf, k)
		})
		if bad != 0 || found == 0 {
			t.Fatalf("values of up to %d bytes: Get without the lock: %d of %d values found were wrong", 8+extra, bad, found)
		}
		// The control: peek's reads kept whatever the seq says.
		var controlBad, controlFound int64
		// A torn read is a race the control must lose at least once: it
		// took from 1 to 9 churns of 30,000 operations in 40 runs, so it
		// gets up to 100, stopping at the first wrong value.
		try := 0
		for ; try < 100 && controlBad == 0; try++ {
			f, b := lockFreeChurn(t, ops, extra, func(c *Cache, k, buf []byte) ([]byte, bool) {
				h := c.hash(k)
				s := c.shardOf(h)
				v := s.seq.Load()
				out, r, ext, n := c.peek(s, h, k, buf, true)
				if r != peekExt {
					return out, r == peekHit
				}
				// A block's address is followed only once the seq shows it
				// is the record's; the control skips the check after the
				// copy.
				if v&1 != 0 || s.seq.Load() != v {
					return out, false
				}
				return append(out, unsafe.Slice((*byte)(ptr(ext)), n)...), true
			})
			controlFound += f
			controlBad += b
		}
		if controlBad == 0 {
			t.Fatalf("values of up to %d bytes: control: %d reads without the seq check found no wrong value: the churn does not reach the reads", 8+extra, controlFound)
		}
		t.Logf("values of up to %d bytes: Get: %d values, all right; control without the seq check: %d of %d wrong, %d tries", 8+extra, found, controlBad, controlFound, try)
	}
}
