// Package openheaps hands package offheaptest the checked heaps that are
// open, which package offheap does not export: offheap sets Checked when it
// is initialized, and nothing else sets it.
package openheaps

// Heap is an open heap with a checker.
type Heap struct {
	Heap    any  // the *offheap.Heap
	Sampled bool // a fast heap that checks only its samples (SampleRate): it knows of no leaks but its samples'
}

// Checked returns every checked (or sampled) heap that is open, in the
// order they were created.
var Checked func() []Heap
