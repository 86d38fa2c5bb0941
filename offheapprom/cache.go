package offheapprom

import (
	"github.com/offheap/offheap/cache"
	"github.com/prometheus/client_golang/prometheus"
)

// CacheCollector is a prometheus.Collector of one cache's Stats (package
// cache). Make one with NewCacheCollector; it is safe for concurrent use.
// The cache's heap has a Collector of its own: NewCollector(c.Heap(), ...).
type CacheCollector struct {
	c *cache.Cache

	hits, misses, sets, deletes, evictions, expirations, compactions *prometheus.Desc
	entries, bytes, maxBytes                                         *prometheus.Desc
}

// NewCacheCollector returns a collector of c's Stats under the label
// cache=name. It panics if c is nil or name is empty.
func NewCacheCollector(c *cache.Cache, name string) *CacheCollector {
	if c == nil {
		panic("offheap: offheapprom.NewCacheCollector of a nil cache")
	}
	if name == "" {
		panic("offheap: offheapprom.NewCacheCollector: the name is empty: name the cache, for the cache label")
	}
	labels := prometheus.Labels{"cache": name}
	desc := func(n, help string) *prometheus.Desc {
		return prometheus.NewDesc("offheap_cache_"+n, help, nil, labels)
	}
	return &CacheCollector{c: c,
		hits:        desc("hits_total", "Gets and Views that found a value."),
		misses:      desc("misses_total", "Gets and Views that found none."),
		sets:        desc("sets_total", "Set calls that reached a shard."),
		deletes:     desc("deletes_total", "Deletes that removed an entry."),
		evictions:   desc("evictions_total", "Entries removed to make room."),
		expirations: desc("expirations_total", "Entries removed because their TTL had passed."),
		compactions: desc("compactions_total", "Segments the cache rewrote to compact them."),
		entries:     desc("entries", "Entries held."),
		bytes:       desc("bytes", "Heap bytes the cache holds: its segments, large values' blocks at class size, its index."),
		maxBytes:    desc("max_bytes", "The cache's MaxBytes."),
	}
}

// Describe sends the descriptions of every metric the collector exports.
func (cc *CacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cc.hits, cc.misses, cc.sets, cc.deletes, cc.evictions, cc.expirations,
		cc.compactions, cc.entries, cc.bytes, cc.maxBytes} {
		ch <- d
	}
}

// Collect reads the cache's Stats and sends every metric.
func (cc *CacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := cc.c.Stats()
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter(cc.hits, s.Hits)
	counter(cc.misses, s.Misses)
	counter(cc.sets, s.Sets)
	counter(cc.deletes, s.Deletes)
	counter(cc.evictions, s.Evictions)
	counter(cc.expirations, s.Expirations)
	counter(cc.compactions, s.Compactions)
	gauge(cc.entries, s.Entries)
	gauge(cc.bytes, s.Bytes)
	gauge(cc.maxBytes, s.MaxBytes)
}

var _ prometheus.Collector = (*CacheCollector)(nil)
