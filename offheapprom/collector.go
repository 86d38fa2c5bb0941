// Package offheapprom exports a heap's census to Prometheus: a
// prometheus.Collector, built on github.com/prometheus/client_golang, that
// reads the heap's offheap.Stats at each scrape. It is a module of its own,
// so that offheap itself does not depend on client_golang.
//
//	reg.MustRegister(offheapprom.NewCollector(h, offheapprom.Opts{Name: "cache"}))
//
// # Metrics
//
// Every metric has the label heap, set to Opts.Name, so that several heaps
// register side by side.
//
//	offheap_allocs_total{source}  counter  Allocs of non-empty blocks, by where they were served:
//	                                       source="magazine", "cache", "central", "fresh" or "large"
//	                                       (sum by source for every Alloc)
//	offheap_frees_total           counter  Frees of non-empty blocks
//	offheap_live_blocks           gauge    blocks allocated and not freed
//	offheap_inuse_bytes           gauge    bytes in live blocks, at block size
//	offheap_mapped_bytes          gauge    address space committed and not released
//	                                       (not resident memory: see offheap_resident_bytes)
//	offheap_released_bytes        gauge    address space given back to the operating system
//	offheap_magazine_bytes        gauge    free blocks parked in per-P magazines
//	offheap_depot_bytes           gauge    free blocks in the central depots
//	offheap_cache_bytes           gauge    free blocks held by open Caches (Heap.NewCache)
//	offheap_corrupt_bytes         gauge    free blocks abandoned to a write after free
//	                                       (nonzero: a use-after-free bug; alert on it)
//
// With Opts.Resident:
//
//	offheap_resident_bytes        gauge    committed bytes resident in physical memory (Heap.ResidentBytes)
//
// With Opts.Classes, per size class, with the label size (the block size in
// bytes):
//
//	offheap_class_allocs_total    counter  Allocs served by the class
//	offheap_class_frees_total     counter  Frees of the class
//	offheap_class_live_blocks     gauge    the class's live blocks
//
// # Caches
//
// NewCacheCollector exports a cache's Stats (package cache), with the label
// cache:
//
//	offheap_cache_hits_total         counter  Gets and Views that found a value
//	offheap_cache_misses_total       counter  Gets and Views that found none
//	offheap_cache_sets_total         counter  Set calls that reached a shard
//	offheap_cache_deletes_total      counter  Deletes that removed an entry
//	offheap_cache_evictions_total    counter  entries removed to make room
//	offheap_cache_expirations_total  counter  entries removed as their TTL passed
//	offheap_cache_compactions_total  counter  compaction passes begun
//	offheap_cache_entries            gauge    entries held
//	offheap_cache_bytes              gauge    heap bytes held: entries at class size, plus the index
//	offheap_cache_max_bytes          gauge    the cache's MaxBytes
//
// # Cost
//
// A scrape costs one Heap.Stats call: each of the heap's locks taken
// briefly, every P's census read, and a slice allocated. The per-class
// figures come with it at no extra cost to the heap, but they add three
// series per size class to every scrape, which is why they are off by
// default. offheap_resident_bytes asks the kernel about every committed
// page (Heap.ResidentBytes): for a heap that has committed many GiB, that
// is milliseconds per scrape.
package offheapprom

import (
	"strconv"

	"github.com/offheap/offheap"
	"github.com/prometheus/client_golang/prometheus"
)

// Opts configures a Collector.
type Opts struct {
	// Name is the value of the heap label on every metric: "default",
	// "cache". Required, and distinct for each heap registered with one
	// registry.
	Name string

	// Classes adds the per-size-class metrics.
	Classes bool

	// Resident adds offheap_resident_bytes, from Heap.ResidentBytes. A
	// scrape for which the heap cannot tell (a closed heap) leaves it out.
	Resident bool
}

// Collector is a prometheus.Collector of one heap's census. Make one with
// NewCollector; it is safe for concurrent use, as the registry requires.
type Collector struct {
	h    *offheap.Heap
	opts Opts

	allocs, frees, live, inUse, mapped, released, magazine, depot, cache, corrupt *prometheus.Desc
	resident                                                                      *prometheus.Desc
	classAllocs, classFrees, classLive                                            *prometheus.Desc
}

// NewCollector returns a collector of h's census under the label
// heap=opts.Name. Register it with a prometheus.Registerer. It panics if h
// is nil or opts.Name is empty.
func NewCollector(h *offheap.Heap, opts Opts) *Collector {
	if h == nil {
		panic("offheap: offheapprom.NewCollector of a nil heap")
	}
	if opts.Name == "" {
		panic("offheap: offheapprom.NewCollector: Opts.Name is empty: name the heap, for the heap label")
	}
	heap := prometheus.Labels{"heap": opts.Name}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("offheap_"+name, help, labels, heap)
	}
	c := &Collector{h: h, opts: opts,
		allocs:   desc("allocs_total", "Allocations of non-empty blocks, by where they were served: a per-P magazine, a Cache (Heap.NewCache), a central free list, a never-used block of a span, or pages of their own (large).", "source"),
		frees:    desc("frees_total", "Frees of non-empty blocks."),
		live:     desc("live_blocks", "Blocks allocated and not yet freed."),
		inUse:    desc("inuse_bytes", "Bytes in live blocks, each counted at its block size."),
		mapped:   desc("mapped_bytes", "Address space committed and not released: what the heap may cost in memory, not what is resident (see offheap_resident_bytes)."),
		released: desc("released_bytes", "Address space given back to the operating system and kept reserved for reuse."),
		magazine: desc("magazine_bytes", "Bytes of free blocks parked in per-P magazines."),
		depot:    desc("depot_bytes", "Bytes of free blocks in the central depots, waiting for a magazine."),
		cache:    desc("cache_bytes", "Bytes of free blocks held by open Caches (Heap.NewCache)."),
		corrupt:  desc("corrupt_bytes", "Bytes of free blocks the heap abandoned because a write after free corrupted their span's free list: nonzero means a use-after-free bug."),
	}
	if opts.Resident {
		c.resident = desc("resident_bytes", "Bytes of the committed address space resident in physical memory.")
	}
	if opts.Classes {
		c.classAllocs = desc("class_allocs_total", "Allocations served by the size class whose block size in bytes is the label size.", "size")
		c.classFrees = desc("class_frees_total", "Frees of blocks of the size class.", "size")
		c.classLive = desc("class_live_blocks", "Live blocks of the size class.", "size")
	}
	return c
}

// Describe sends the descriptions of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.allocs, c.frees, c.live, c.inUse, c.mapped, c.released, c.magazine, c.depot, c.cache,
		c.corrupt, c.resident, c.classAllocs, c.classFrees, c.classLive} {
		if d != nil {
			ch <- d
		}
	}
}

// Collect reads the heap's Stats and sends every metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.h.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter(c.allocs, s.MagazineHits, "magazine")
	counter(c.allocs, s.CacheHits, "cache")
	counter(c.allocs, s.CentralHits, "central")
	counter(c.allocs, s.Fresh, "fresh")
	counter(c.allocs, s.Large, "large")
	counter(c.frees, s.Frees)
	gauge(c.live, s.LiveBlocks)
	gauge(c.inUse, s.InUseBytes)
	gauge(c.mapped, s.MappedBytes)
	gauge(c.released, s.ReleasedBytes)
	gauge(c.magazine, s.MagazineBytes)
	gauge(c.depot, s.DepotBytes)
	gauge(c.cache, s.CacheBytes)
	gauge(c.corrupt, s.CorruptBytes)
	if c.resident != nil {
		if r, err := c.h.ResidentBytes(); err == nil {
			gauge(c.resident, r)
		}
	}
	if c.classAllocs != nil {
		for _, cs := range s.Classes {
			size := strconv.Itoa(cs.Size)
			counter(c.classAllocs, cs.Allocs, size)
			counter(c.classFrees, cs.Frees, size)
			gauge(c.classLive, cs.InUse, size)
		}
	}
}

var _ prometheus.Collector = (*Collector)(nil)
