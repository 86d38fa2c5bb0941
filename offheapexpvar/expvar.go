// Package offheapexpvar publishes a heap's census through expvar, so that
// /debug/vars shows it beside the runtime's memstats: the JSON of the heap's
// offheap.Stats, with the Go field names as keys (as memstats has), taken
// afresh on every read.
//
//	offheapexpvar.Publish("offheap", offheap.Default())
//
// Importing expvar registers /debug/vars on http.DefaultServeMux; a server
// with a mux of its own mounts expvar.Handler() there.
//
// A cache (package cache) publishes its own counters with PublishCache.
//
// Each read costs one Stats call: every lock of the heap taken briefly, and
// a slice for the per-class census. That suits a scrape every few seconds,
// not a hot path (see Heap.InUse for that).
package offheapexpvar

import (
	"expvar"
	"fmt"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/cache"
)

// Var returns an expvar.Var whose String is the JSON of h.Stats() at the
// time of the call. Publish it under a name of your choosing with
// expvar.Publish, or use Publish. It panics if h is nil.
func Var(h *offheap.Heap) expvar.Var {
	if h == nil {
		panic("offheap: offheapexpvar.Var of a nil heap: pass the heap to publish (offheap.Default() for the process-wide one)")
	}
	return expvar.Func(func() any { return h.Stats() })
}

// Publish publishes Var(h) under name: /debug/vars then has a key name
// whose value is the heap's Stats. It panics if name is already published
// (expvar's names are process-wide and cannot be removed) or h is nil.
func Publish(name string, h *offheap.Heap) {
	v := Var(h)
	if expvar.Get(name) != nil {
		panic(fmt.Sprintf("offheap: offheapexpvar.Publish: the expvar name %q is already published: choose another", name))
	}
	expvar.Publish(name, v)
}

// CacheVar returns an expvar.Var whose String is the JSON of c.Stats() (a
// cache.Stats) at the time of the call. It panics if c is nil.
func CacheVar(c *cache.Cache) expvar.Var {
	if c == nil {
		panic("offheap: offheapexpvar.CacheVar of a nil cache: pass the cache to publish")
	}
	return expvar.Func(func() any { return c.Stats() })
}

// PublishCache publishes CacheVar(c) under name. It panics if name is
// already published or c is nil. The cache's heap is published apart, with
// Publish(name, c.Heap()) under another name.
func PublishCache(name string, c *cache.Cache) {
	v := CacheVar(c)
	if expvar.Get(name) != nil {
		panic(fmt.Sprintf("offheap: offheapexpvar.PublishCache: the expvar name %q is already published: choose another", name))
	}
	expvar.Publish(name, v)
}
