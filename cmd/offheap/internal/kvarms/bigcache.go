package kvarms

import (
	"context"
	"math/bits"
	"time"

	"github.com/allegro/bigcache/v3"
)

func init() {
	Register(Arm{
		Name: "bigcache", Peer: true, GoHeap: true, Evicts: true,
		Doc: "allegro/bigcache v3.1.0: shards of a map[uint64]uint32 into a pointer-free byte queue on the Go heap, " +
			"HardMaxCacheSize the budget; evicts the oldest entry; Get returns a copy",
		New: newBigcache,
	})
}

func newBigcache(o Options) (Cache, error) {
	// A shard per MiB of budget, 16 to 1024 (bigcache's default), a power
	// of two: a 1 MiB shard still holds 16 of the largest block values.
	shards := 1 << (bits.Len(uint(max(o.MaxBytes>>20, 16))) - 1)
	shards = min(shards, 1024)
	cfg := bigcache.DefaultConfig(24 * time.Hour) // no entry expires during a run
	cfg.CleanWindow = 0
	cfg.Shards = shards
	cfg.HardMaxCacheSize = max(o.MaxBytes>>20, 1)
	cfg.MaxEntriesInWindow = max(o.Entries, 1)
	cfg.MaxEntrySize = max(o.EntryBytes, 1)
	cfg.Verbose = false
	c, err := bigcache.New(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return &bigArm{c}, nil
}

type bigArm struct{ c *bigcache.BigCache }

func (a *bigArm) Set(k, v []byte) { a.c.Set(str(k), v) }

func (a *bigArm) Get(dst, k []byte) ([]byte, bool) {
	v, err := a.c.Get(str(k))
	if err != nil {
		return dst, false
	}
	return append(dst, v...), true
}

func (a *bigArm) Delete(k []byte) { a.c.Delete(str(k)) }
func (a *bigArm) Close() error    { return a.c.Close() }
