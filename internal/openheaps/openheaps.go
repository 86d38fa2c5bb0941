// Package openheaps hands package offheaptest the checked heaps that are
// open, which package offheap does not export: offheap sets Checked when it
// is initialized, and nothing else sets it.
package openheaps

// Checked returns every checked (or sampled) heap that is open, as
// *offheap.Heap values, in the order they were created.
var Checked func() []any
