package offheapprom_test

import (
	"fmt"
	"net/http"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/offheapprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A collector per heap, each named by its heap label, on the registry a
// server exposes at /metrics.
func ExampleNewCollector() {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(offheapprom.NewCollector(h, offheapprom.Opts{Name: "cache"}))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	b := h.Alloc(1 << 20)
	defer h.Free(b)
	mfs, err := reg.Gather() // what a scrape of /metrics reads
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		if mf.GetName() == "offheap_live_blocks" {
			m := mf.GetMetric()[0]
			fmt.Printf("%s{%s=%q} %v\n", mf.GetName(), m.GetLabel()[0].GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
		}
	}
	// Output: offheap_live_blocks{heap="cache"} 1
}

// Opts adds the per-class series and the resident bytes, for a heap whose
// classes are worth watching one by one.
func ExampleOpts() {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(offheapprom.NewCollector(h, offheapprom.Opts{Name: "cache", Classes: true, Resident: true}))

	b := h.Alloc(4096)
	defer h.Free(b)
	b[0] = 1
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "offheap_class_live_blocks":
			fmt.Println(mf.GetName(), "has a series per size class:", len(mf.GetMetric()) == len(h.Stats().Classes))
		case "offheap_resident_bytes":
			fmt.Println(mf.GetName(), "counts the page written:", mf.GetMetric()[0].GetGauge().GetValue() > 0)
		}
	}
	// Output:
	// offheap_class_live_blocks has a series per size class: true
	// offheap_resident_bytes counts the page written: true
}

// Collector is a prometheus.Collector: register it with any Registerer,
// the default one included.
func ExampleCollector() {
	prometheus.MustRegister(offheapprom.NewCollector(offheap.Default(), offheapprom.Opts{Name: "default"}))
	http.Handle("/metrics", promhttp.Handler())
}
