package kvarms

import "github.com/offheap/offheap/cache"

func init() {
	Register(Arm{
		Name: "offheap-kv", Evicts: true,
		Doc: "offheap's cache package: a sharded hash table whose index, keys and values live in an offheap Heap " +
			"that MaxBytes bounds, all of it; the Go heap holds O(shards)",
		New: func(o Options) (Cache, error) {
			c, err := cache.New(cache.Options{MaxBytes: int64(o.MaxBytes)})
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Load: func(path string, o Options) (Cache, error) {
			c, err := cache.New(cache.Options{MaxBytes: int64(o.MaxBytes)})
			if err != nil {
				return nil, err
			}
			if err := c.LoadFromFile(path); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
	})
}
