package cache_test

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/offheap/offheap/cache"
)

func TestTTL(t *testing.T) {
	c, err := cache.New(cache.Options{MaxBytes: 1 << 20, DefaultTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetWithTTL([]byte("short"), []byte("v"), time.Nanosecond)
	c.SetWithTTL([]byte("never"), []byte("v"), 0)
	c.Set([]byte("default"), []byte("v"))
	time.Sleep(time.Millisecond) // at least; the test bounds nothing by time
	if _, ok := c.Get(nil, []byte("short")); ok {
		t.Error("an expired entry was found")
	}
	if c.Has([]byte("short")) {
		t.Error("Has found an expired entry")
	}
	for _, k := range []string{"never", "default"} {
		if _, ok := c.Get(nil, []byte(k)); !ok {
			t.Errorf("%s was not found", k)
		}
	}
	if st := c.Stats(); st.Expirations != 1 || st.Entries != 2 {
		t.Errorf("Stats %+v: want 1 expiration, 2 entries", st)
	}
	// Replacing a value in place changes its expiry.
	c.SetWithTTL([]byte("never"), []byte("w"), time.Nanosecond)
	time.Sleep(time.Millisecond)
	if _, ok := c.Get(nil, []byte("never")); ok {
		t.Error("a value replaced with a TTL did not expire")
	}
	if _, err := cache.New(cache.Options{MaxBytes: 1 << 20, DefaultTTL: -1}); err == nil {
		t.Error("New accepted a negative DefaultTTL")
	}
}

// TestTTLForever: a lifetime past the clock's range, such as
// time.Duration(math.MaxInt64) for "forever", keeps the entry, through Set,
// SetWithTTL, DefaultTTL and a snapshot's save and load, where a sum that
// wrapped would expire it at once.
func TestTTLForever(t *testing.T) {
	const forever = time.Duration(math.MaxInt64)
	c, err := cache.New(cache.Options{MaxBytes: 1 << 20, DefaultTTL: forever})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Set([]byte("default"), []byte("v"))
	c.SetWithTTL([]byte("max"), []byte("v"), forever)
	c.SetWithTTL([]byte("half"), []byte("v"), forever/2)
	if err := c.TrySetWithTTL([]byte("try"), []byte("v"), forever-1); err != nil {
		t.Fatal(err)
	}
	keys := []string{"default", "max", "half", "try"}
	for _, k := range keys {
		if _, ok := c.Get(nil, []byte(k)); !ok {
			t.Errorf("%q, stored for ever, was not found", k)
		}
	}
	var snap bytes.Buffer
	if err := c.SaveTo(&snap); err != nil {
		t.Fatal(err)
	}
	d, err := cache.New(cache.Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.LoadFrom(&snap); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, ok := d.Get(nil, []byte(k)); !ok {
			t.Errorf("%q, stored for ever, was not found after a snapshot's load", k)
		}
	}
}

// TestExpiredEvictedFirst fills a cache with entries that have expired:
// the hand removes them as expirations, not evictions.
func TestExpiredEvictedFirst(t *testing.T) {
	c, err := cache.New(cache.Options{MaxBytes: 64 << 10, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := make([]byte, 100)
	for i := range 1000 {
		c.SetWithTTL([]byte{byte(i), byte(i >> 8)}, v, time.Nanosecond)
	}
	st := c.Stats()
	if st.Expirations == 0 {
		t.Errorf("Stats %+v: want expirations", st)
	}
}
