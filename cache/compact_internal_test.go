package cache

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/offheap/offheap"

	"github.com/offheap/offheap/internal/osmem"
)

// churn fills c past its budget with values whose sizes change as keys
// are set again, so that evictions and replacements leave dead records. It
// returns the number of keys.
func churn(c *Cache) int {
	r := rand.New(rand.NewPCG(7, 8))
	keys := int(c.maxBytes / 300) // about twice what the budget holds
	key := make([]byte, 16)
	val := make([]byte, 1024)
	for i := range 3 * keys {
		binary.LittleEndian.PutUint64(key, uint64(i%keys))
		c.Set(key, val[:64+r.IntN(960)])
	}
	return keys
}

// deleteMost removes 90% of the keys, at random, with del.
func deleteMost(keys int, del func(k []byte)) {
	r := rand.New(rand.NewPCG(9, 10))
	key := make([]byte, 16)
	for _, k := range r.Perm(keys)[:keys*9/10] {
		binary.LittleEndian.PutUint64(key, uint64(k))
		del(key)
	}
}

// deleteQuietly removes k as Delete does, but runs no compaction step: a
// cache whose compaction is broken.
func deleteQuietly(c *Cache, k []byte) {
	h := c.hash(k)
	s := c.shardOf(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, found := s.find(h, k); found {
		c.removeAt(s, i)
	}
}

// deadExcess checks compact.go's bound on every shard of c: dead bytes at
// most a compactFrac of the records' bytes plus a minGain-th of a segment,
// with slack for the record the last removal killed. It describes the
// shards past it, or returns "".
func deadExcess(c *Cache, slack int64) string {
	var out string
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		d := c.dead(s)
		if limit := (s.live+d)/compactFrac + int64(c.segSize/minGain) + slack; d > limit {
			out += fmt.Sprintf("shard %d: %d dead bytes, %d live, limit %d; ", i, d, s.live, limit)
		}
		s.mu.Unlock()
	}
	return out
}

// TestCompactionBoundsDead churns caches with large and small segments,
// deletes 90% of their keys, and checks that compaction has held every
// shard's dead bytes to the rule's bound (compact.go) with no call but the
// Deletes. The positive control deletes the same keys in a cache whose
// Deletes run no compaction step, and must see the bound broken.
func TestCompactionBoundsDead(t *testing.T) {
	for _, maxBytes := range []int64{16 << 20, 1 << 20} {
		t.Run(fmt.Sprint(maxBytes>>20, "MiB"), func(t *testing.T) {
			c, err := New(Options{MaxBytes: maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			deleteMost(churn(c), c.Delete)
			const slack = 1088 // the largest record the churn writes
			if e := deadExcess(c, slack); e != "" {
				t.Errorf("segment size %d: %s", c.segSize, e)
			}
			t.Logf("segment size %d, %d shards: %+v", c.segSize, len(c.shards), c.Stats())

			broken, err := New(Options{MaxBytes: maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			defer broken.Close()
			deleteMost(churn(broken), func(k []byte) { deleteQuietly(broken, k) })
			if deadExcess(broken, slack) == "" {
				t.Errorf("positive control: deletes without compaction left every shard within the bound")
			}
		})
	}
}

// TestCompactionReleasesTails churns a cache, deletes 90% of its keys and
// checks that the tails compaction opened keep no resident page past their used
// bytes (mincore). The cache uses a heap it does not own, so that no Trim
// releases the freed segments' pages before the heap hands them out as
// tails, and that heap does not release free pages on a timer either. The
// positive control checks that the same probe finds the written pages of
// every segment resident. Four shards of 3.75 MiB have page-run segments
// (bigSegment), many pages long even with 64 KiB pages.
func TestCompactionReleasesTails(t *testing.T) {
	h, err := offheap.NewHeap(offheap.Options{ReleaseDelay: 1000 * time.Hour})
	if err != nil {
		t.Skip(err)
	}
	defer h.Close()
	c, err := New(Options{MaxBytes: 16 << 20, Shards: 4, Heap: h})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.segSize != bigSegment {
		t.Fatalf("segments of %d bytes, want %d", c.segSize, bigSegment)
	}
	keys := churn(c)
	// The tails the churn's Sets opened reuse the pages evictions freed, as
	// they should in a full cache: only the tails compactions open count.
	before := map[uintptr]bool{}
	for i := range c.shards {
		s := &c.shards[i]
		for li := range s.logs {
			if id := s.logs[li].tail; id != 0 {
				before[s.segs[id].addr] = true
			}
		}
	}
	deleteMost(keys, c.Delete)
	page := osmem.PageSize
	resident := func(from, to uintptr) int {
		from = (from + page - 1) &^ (page - 1)
		to &^= page - 1
		if to <= from {
			return 0
		}
		vec := make([]byte, (to-from)/page)
		if err := osmem.Resident(ptr(from), to-from, vec); err != nil {
			t.Skipf("mincore: %v", err)
		}
		n := 0
		for _, b := range vec {
			n += int(b & 1)
		}
		return n
	}
	var unusedPages, written, writtenPages int
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for li := range s.logs {
			for _, id := range s.logs[li].ids {
				g := s.segs[id]
				if id == s.logs[li].tail && !before[g.addr] {
					unusedPages += resident(g.addr+uintptr(g.used), g.addr+uintptr(c.segSize))
				}
				// Round the written bytes inward: only pages wholly written.
				writtenPages += resident(g.addr, g.addr+uintptr(g.used))
				written += int((uintptr(g.used) &^ (page - 1)) / page)
			}
		}
		s.mu.Unlock()
	}
	if st := c.Stats(); st.Compactions == 0 {
		t.Fatalf("no compaction ran: %+v", st)
	}
	if unusedPages != 0 {
		t.Errorf("the tails keep %d resident pages past their used bytes, want 0", unusedPages)
	}
	if written == 0 || writtenPages != written {
		t.Errorf("positive control: %d of the %d wholly written pages of the segments resident, want all", writtenPages, written)
	}
}
