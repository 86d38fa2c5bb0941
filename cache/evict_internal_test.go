package cache

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// checkLogs checks each shard's logs against their records: a log's ext
// is the class size of the values its live records keep in blocks of
// their own, and its head is within its head segment (0 with no segment).
// It returns the first difference, or "".
func checkLogs(c *Cache) string {
	for si := range c.shards {
		s := &c.shards[si]
		s.mu.Lock()
		var ext [2]int64
		for li := range s.logs {
			for _, id := range s.logs[li].ids {
				s.records(id, func(e entry, _ int) bool {
					if b := e.ext(); b != nil {
						ext[s.segs[id].log] += c.classSize(len(b))
					}
					return true
				})
			}
		}
		for li := range s.logs {
			l := &s.logs[li]
			msg := ""
			switch {
			case l.ext != ext[li]:
				msg = fmt.Sprintf("ext %d, its records' blocks %d", l.ext, ext[li])
			case len(l.ids) == 0 && l.head != 0:
				msg = fmt.Sprintf("head %d with no segment", l.head)
			case len(l.ids) > 0 && l.head > int(s.segs[l.ids[0]].used):
				msg = fmt.Sprintf("head %d past its segment's %d bytes", l.head, s.segs[l.ids[0]].used)
			}
			if msg != "" {
				s.mu.Unlock()
				return fmt.Sprintf("shard %d, log %d: %s", si, li, msg)
			}
		}
		s.mu.Unlock()
	}
	return ""
}

// TestEvictRecordByRecord fills a one-shard cache with values kept in
// blocks of their own, whose records all fit in one segment, then sets
// new keys: each Set evicts about one value, not its log's whole segment
// (which held every entry: before eviction went record by record, the
// first Set past the budget emptied the cache).
func TestEvictRecordByRecord(t *testing.T) {
	c, err := New(Options{MaxBytes: 8 << 20, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k, v := make([]byte, 16), make([]byte, 16<<10)
	i := uint64(0)
	set := func() { binary.LittleEndian.PutUint64(k, i); i++; c.Set(k, v) }
	for c.Stats().Evictions == 0 {
		set()
	}
	n := c.Len()
	if n < 200 {
		t.Fatalf("the cache held %d values of 16 KiB at its first eviction", n)
	}
	for range 50 {
		set()
		if got := c.Len(); got < n-3 {
			t.Fatalf("after %d values, a Set left %d entries: eviction took more than a value's room", n, got)
		}
	}
	if msg := checkLogs(c); msg != "" {
		t.Fatal(msg)
	}
}

// TestEvictLogsAccounting runs Sets of values inline and in blocks of
// their own, reads, Deletes and expiring entries through evictions and
// compactions, checking the logs' accounting (checkLogs) as it goes.
// Positive control: a log's ext one off is caught.
func TestEvictLogsAccounting(t *testing.T) {
	c, err := New(Options{MaxBytes: 4 << 20, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := rand.New(rand.NewPCG(11, 12))
	k, v := make([]byte, 16), make([]byte, 40<<10)
	for j := range 40000 {
		binary.LittleEndian.PutUint64(k, uint64(r.IntN(2000)))
		switch x := r.IntN(10); {
		case x < 4:
			c.Get(nil, k)
		case x < 5:
			c.Delete(k)
		case x < 6:
			c.SetWithTTL(k, v[:r.IntN(8<<10)], time.Nanosecond)
		default:
			size := r.IntN(64)
			if r.IntN(3) == 0 {
				size = 4<<10 + r.IntN(36<<10)
			}
			c.Set(k, v[:size])
		}
		if j%1000 == 999 {
			if msg := checkLogs(c); msg != "" {
				t.Fatalf("after %d operations: %s", j+1, msg)
			}
		}
	}
	if st := c.Stats(); st.Evictions == 0 || st.Expirations == 0 {
		t.Fatalf("no evictions or no expirations: %+v", st)
	}
	s := &c.shards[0]
	s.mu.Lock()
	s.logs[logMain].ext++
	s.mu.Unlock()
	if checkLogs(c) == "" {
		t.Error("positive control: a log's ext one off passed")
	}
	s.mu.Lock()
	s.logs[logMain].ext--
	s.mu.Unlock()
}
