package offheapprom

import (
	"strings"
	"testing"

	"github.com/offheap/offheap/cache"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCacheCollector scrapes a cache after known operations, and lints the
// scrape.
func TestCacheCollector(t *testing.T) {
	c, err := cache.New(cache.Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Skip(err)
	}
	defer c.Close()
	c.Set([]byte("a"), []byte("1"))
	c.Set([]byte("b"), []byte("2"))
	c.Get(nil, []byte("a"))
	c.Get(nil, []byte("zz"))
	c.Delete([]byte("b"))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCacheCollector(c, "test"))
	want := `
# HELP offheap_cache_deletes_total Deletes that removed an entry.
# TYPE offheap_cache_deletes_total counter
offheap_cache_deletes_total{cache="test"} 1
# HELP offheap_cache_entries Entries held.
# TYPE offheap_cache_entries gauge
offheap_cache_entries{cache="test"} 1
# HELP offheap_cache_hits_total Gets and Views that found a value.
# TYPE offheap_cache_hits_total counter
offheap_cache_hits_total{cache="test"} 1
# HELP offheap_cache_max_bytes The cache's MaxBytes.
# TYPE offheap_cache_max_bytes gauge
offheap_cache_max_bytes{cache="test"} 1.048576e+06
# HELP offheap_cache_misses_total Gets and Views that found none.
# TYPE offheap_cache_misses_total counter
offheap_cache_misses_total{cache="test"} 1
# HELP offheap_cache_sets_total Set calls that reached a shard.
# TYPE offheap_cache_sets_total counter
offheap_cache_sets_total{cache="test"} 2
`
	names := []string{"offheap_cache_deletes_total", "offheap_cache_entries", "offheap_cache_hits_total",
		"offheap_cache_max_bytes", "offheap_cache_misses_total", "offheap_cache_sets_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 10 {
		t.Errorf("%d metrics (%v), want 10", n, err)
	}
}
