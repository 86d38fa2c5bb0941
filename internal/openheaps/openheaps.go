// Package openheaps hands package offheaptest the checked heaps that are
// open, and which of them is the default heap, which package offheap does
// not export: offheap sets Checked and Default when it is initialized, and
// nothing else sets them.
package openheaps

// Checked returns every checked (or sampled) heap that is open, as
// *offheap.Heap values, in the order they were created.
var Checked func() []any

// Default returns offheap.Default()'s heap as an *offheap.Heap if it has
// been made, and nil if not: unlike offheap.Default, it never makes it.
var Default func() any
