// Package openheaps hands package offheaptest the checked heaps that are
// open, and which of them is the default heap, which package offheap does
// not export: offheap sets Checked and Default when it is initialized, and
// nothing else sets them.
package openheaps

// Heap is an open heap with a checker.
type Heap struct {
	Heap    any  // the *offheap.Heap
	Sampled bool // a fast heap that checks only its samples (GuardOneIn): it knows of no leaks but its samples'
}

// Checked returns every checked (or sampled) heap that is open, in the
// order they were created.
var Checked func() []Heap

// Default returns offheap.Default()'s heap as an *offheap.Heap if it has
// been made, and nil if not: unlike offheap.Default, it never makes it.
var Default func() any
