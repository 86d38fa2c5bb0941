package offheapexpvar

import (
	"encoding/json"
	"expvar"
	"fmt"
	"testing"

	"github.com/offheap/offheap/cache"
)

// TestPublishCache publishes a cache's Stats and reads them back as JSON
// after some operations.
func TestPublishCache(t *testing.T) {
	c, err := cache.New(cache.Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Skip(err) // a system without a backend
	}
	defer c.Close()
	runs++
	name := fmt.Sprintf("offheap_test_cache_%d", runs)
	PublishCache(name, c)
	c.Set([]byte("k"), []byte("v"))
	c.Get(nil, []byte("k"))
	c.Get(nil, []byte("absent"))
	var st cache.Stats
	if err := json.Unmarshal([]byte(expvar.Get(name).String()), &st); err != nil {
		t.Fatal(err)
	}
	if st != c.Stats() || st.Hits != 1 || st.Misses != 1 || st.Entries != 1 || st.Bytes == 0 {
		t.Fatalf("published %+v, the cache says %+v", st, c.Stats())
	}
	defer func() {
		if recover() == nil {
			t.Error("a second PublishCache of the name did not panic")
		}
	}()
	PublishCache(name, c)
}
