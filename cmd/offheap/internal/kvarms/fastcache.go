package kvarms

import "github.com/VictoriaMetrics/fastcache"

func init() {
	Register(Arm{
		Name: "fastcache", Peer: true, Evicts: true,
		Doc: "VictoriaMetrics/fastcache v1.13.2: 512 buckets, each a ring of 64 KiB chunks mmapped off the Go heap " +
			"and a map[uint64]uint64 index; evicts a bucket's oldest chunk",
		New: func(o Options) (Cache, error) { return &fastArm{fastcache.New(o.MaxBytes)}, nil },
		Load: func(path string, o Options) (Cache, error) {
			c, err := fastcache.LoadFromFileMaxBytes(path, o.MaxBytes)
			if err != nil {
				return nil, err
			}
			return &fastArm{c}, nil
		},
	})
}

type fastArm struct{ c *fastcache.Cache }

func (a *fastArm) Set(k, v []byte)                  { a.c.Set(k, v) }
func (a *fastArm) Get(dst, k []byte) ([]byte, bool) { return a.c.HasGet(dst, k) }
func (a *fastArm) Delete(k []byte)                  { a.c.Del(k) }

// Close resets the cache, which hands its chunks to fastcache's free list
// for the next instance (fastcache never unmaps them).
func (a *fastArm) Close() error { a.c.Reset(); return nil }

// MappedBytes is the chunk memory the cache holds.
func (a *fastArm) MappedBytes() uint64 {
	var s fastcache.Stats
	a.c.UpdateStats(&s)
	return s.BytesSize
}

// SaveToFile writes the cache to the directory path, one file per CPU's
// worth of buckets, as fastcache's own SaveToFile does.
func (a *fastArm) SaveToFile(path string) error { return a.c.SaveToFile(path) }
