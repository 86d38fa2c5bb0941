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
// register side by side. Each metric is a field of offheap.Stats or
// offheap.ClassStats, and every such field is exported: a field added to
// Stats without a metric here fails this package's tests.
//
//	offheap_allocs_total{source}     counter  Allocs of non-empty blocks, by where they were served:
//	                                          source="magazine", "local", "central", "fresh" or "large"
//	                                          (sum by source for every Alloc)
//	offheap_frees_total              counter  Frees of non-empty blocks
//	offheap_live_blocks              gauge    blocks allocated and not freed
//	offheap_inuse_bytes              gauge    bytes in live blocks, at block size
//	offheap_mapped_bytes             gauge    address space committed and not released
//	                                          (not resident memory: see offheap_resident_bytes)
//	offheap_released_bytes           gauge    address space given back to the operating system
//	offheap_magazine_bytes           gauge    free blocks parked in per-P magazines
//	offheap_depot_bytes              gauge    free blocks in the central depots
//	offheap_local_bytes              gauge    free blocks held by open Locals (Heap.NewLocal)
//	offheap_span_free_bytes          gauge    free bytes of small-block spans that no magazine, depot
//	                                          or Local holds: what a Relocate pass could give back
//	offheap_relocations_total        counter  blocks Relocate moved
//	offheap_corrupt_bytes            gauge    free blocks abandoned to a write after free
//	                                          (nonzero: a use-after-free bug; alert on it)
//
// With Opts.Resident:
//
//	offheap_resident_bytes           gauge    committed bytes resident in physical memory (Heap.ResidentBytes)
//
// With Opts.Classes, per size class, with the label size (the block size in
// bytes):
//
//	offheap_class_allocs_total       counter  Allocs served by the class
//	offheap_class_frees_total        counter  Frees of the class
//	offheap_class_live_blocks        gauge    the class's live blocks
//	offheap_class_span_free_bytes    gauge    the class's share of offheap_span_free_bytes
//	offheap_class_relocations_total  counter  blocks of the class Relocate moved
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
//	offheap_cache_compactions_total  counter  segments rewritten by compaction
//	offheap_cache_entries            gauge    entries held
//	offheap_cache_bytes              gauge    heap bytes held: entries at class size, plus the index
//	offheap_cache_max_bytes          gauge    the cache's MaxBytes
//
// # Cost
//
// A scrape costs one Heap.Stats call: each of the heap's locks taken
// briefly, every P's census read, and a slice allocated. The per-class
// figures come with it at no extra cost to the heap, but they add five
// series per size class to every scrape, which is why they are off by
// default. offheap_resident_bytes asks the kernel about every committed
// page (Heap.ResidentBytes): for a heap that has committed many GiB, that
// is milliseconds per scrape.
package offheapprom

import (
	"reflect"
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

// stat is how one uint64 field of offheap.Stats or offheap.ClassStats is
// exported. Fields that share a metric (the allocations by source) differ
// in source; the first of them gives the metric's kind and help.
type stat struct {
	field  string // the Go field's name
	metric string // the metric's name after "offheap_"
	source string // the source label's value, or "" for a metric without one
	kind   prometheus.ValueType
	help   string
}

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

// heapStats exports every uint64 field of offheap.Stats but those in
// summed; TestEveryStatsField keeps it so.
var heapStats = []stat{
	{"MagazineHits", "allocs_total", "magazine", counter, "Allocations of non-empty blocks, by where they were served: a per-P magazine, a Local (Heap.NewLocal), a central free list, a never-used block of a span, or pages of their own (large)."},
	{"LocalHits", "allocs_total", "local", counter, ""},
	{"CentralHits", "allocs_total", "central", counter, ""},
	{"Fresh", "allocs_total", "fresh", counter, ""},
	{"Large", "allocs_total", "large", counter, ""},
	{"Frees", "frees_total", "", counter, "Frees of non-empty blocks."},
	{"LiveBlocks", "live_blocks", "", gauge, "Blocks allocated and not yet freed."},
	{"InUseBytes", "inuse_bytes", "", gauge, "Bytes in live blocks, each counted at its block size."},
	{"MappedBytes", "mapped_bytes", "", gauge, "Address space committed and not released: what the heap may cost in memory, not what is resident (see offheap_resident_bytes)."},
	{"ReleasedBytes", "released_bytes", "", gauge, "Address space given back to the operating system and kept reserved for reuse."},
	{"MagazineBytes", "magazine_bytes", "", gauge, "Bytes of free blocks parked in per-P magazines."},
	{"DepotBytes", "depot_bytes", "", gauge, "Bytes of free blocks in the central depots, waiting for a magazine."},
	{"LocalBytes", "local_bytes", "", gauge, "Bytes of free blocks held by open Locals (Heap.NewLocal)."},
	{"SpanFreeBytes", "span_free_bytes", "", gauge, "Free bytes of small-block spans that no magazine, depot or Local holds: what a Relocate pass could give back."},
	{"Relocations", "relocations_total", "", counter, "Blocks Relocate moved."},
	{"CorruptBytes", "corrupt_bytes", "", gauge, "Bytes of free blocks the heap abandoned because a write after free corrupted their span's free list: nonzero means a use-after-free bug."},
}

// summed names the uint64 fields of offheap.Stats that add up others a
// metric already carries: Allocs is allocs_total summed over its sources.
var summed = map[string]bool{"Allocs": true}

// classStats exports every uint64 field of offheap.ClassStats, each with
// the label size (ClassStats.Size).
var classStats = []stat{
	{"Allocs", "class_allocs_total", "", counter, "Allocations served by the size class whose block size in bytes is the label size."},
	{"Frees", "class_frees_total", "", counter, "Frees of blocks of the size class."},
	{"InUse", "class_live_blocks", "", gauge, "Live blocks of the size class."},
	{"SpanFreeBytes", "class_span_free_bytes", "", gauge, "Free bytes of the size class's spans that no magazine, depot or Local holds."},
	{"Relocations", "class_relocations_total", "", counter, "Blocks of the size class Relocate moved."},
}

// metric is a stat made ready for a scrape: the field's index in its
// struct and the metric's description.
type metric struct {
	stat
	index int
	desc  *prometheus.Desc
}

// describe resolves each stat's field in t and gives the stats of one
// metric name one description, with the labels that metric has.
func describe(t reflect.Type, stats []stat, heap string, labels ...string) []metric {
	descs := make(map[string]*prometheus.Desc)
	ms := make([]metric, len(stats))
	for i, st := range stats {
		f, ok := t.FieldByName(st.field)
		if !ok || f.Type.Kind() != reflect.Uint64 {
			panic("offheap: offheapprom: " + t.String() + " has no uint64 field " + st.field)
		}
		d := descs[st.metric]
		if d == nil {
			ls := labels
			if st.source != "" {
				ls = append([]string{"source"}, labels...)
			}
			d = prometheus.NewDesc("offheap_"+st.metric, st.help, ls, prometheus.Labels{"heap": heap})
			descs[st.metric] = d
		}
		ms[i] = metric{stat: st, index: f.Index[0], desc: d}
	}
	return ms
}

// Collector is a prometheus.Collector of one heap's census. Make one with
// NewCollector; it is safe for concurrent use, as the registry requires.
type Collector struct {
	h        *offheap.Heap
	heap     []metric // every metric of Stats
	class    []metric // every metric of ClassStats, with Opts.Classes
	resident *prometheus.Desc
}

// NewCollector returns a collector of h's census under the label
// heap=opts.Name. Register it with a prometheus.Registerer. It panics if h
// is nil or opts.Name is empty.
func NewCollector(h *offheap.Heap, opts Opts) *Collector {
	if h == nil {
		panic("offheap: offheapprom.NewCollector of a nil heap: pass the heap to export (offheap.Default() for the process-wide one)")
	}
	if opts.Name == "" {
		panic("offheap: offheapprom.NewCollector: Opts.Name is empty: name the heap, for the heap label")
	}
	c := &Collector{h: h, heap: describe(reflect.TypeFor[offheap.Stats](), heapStats, opts.Name)}
	if opts.Classes {
		c.class = describe(reflect.TypeFor[offheap.ClassStats](), classStats, opts.Name, "size")
	}
	if opts.Resident {
		c.resident = prometheus.NewDesc("offheap_resident_bytes", "Bytes of the committed address space resident in physical memory.", nil, prometheus.Labels{"heap": opts.Name})
	}
	return c
}

// Describe sends the descriptions of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	seen := make(map[*prometheus.Desc]bool)
	for _, m := range append(c.heap[:len(c.heap):len(c.heap)], c.class...) {
		if !seen[m.desc] {
			seen[m.desc] = true
			ch <- m.desc
		}
	}
	if c.resident != nil {
		ch <- c.resident
	}
}

// Collect reads the heap's Stats and sends every metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.h.Stats()
	send := func(v reflect.Value, m metric, labels ...string) {
		if m.source != "" {
			labels = append([]string{m.source}, labels...)
		}
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(v.Field(m.index).Uint()), labels...)
	}
	sv := reflect.ValueOf(s)
	for _, m := range c.heap {
		send(sv, m)
	}
	for _, cs := range s.Classes {
		cv, size := reflect.ValueOf(cs), strconv.Itoa(cs.Size)
		for _, m := range c.class {
			send(cv, m, size)
		}
	}
	if c.resident != nil {
		if r, err := c.h.ResidentBytes(); err == nil {
			ch <- prometheus.MustNewConstMetric(c.resident, gauge, float64(r))
		}
	}
}

var _ prometheus.Collector = (*Collector)(nil)
