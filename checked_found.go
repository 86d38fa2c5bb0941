package offheap

// The memory errors a checked heap has found, kept so that a test learns of
// one that a recover, or a goroutine other than the test's, swallowed (a
// write after free is panicked from whichever Free pushes the block out of
// the quarantine), or that a Close whose error was dropped returned.
// Heap.MemoryErrors returns them; offheaptest fails a test with them.

import (
	"errors"
	"sync"
)

// maxFound is how many memory errors a heap keeps: the first ones.
const maxFound = 100

// found is a checker's log of the memory errors it panicked with, and of
// those its Close returned.
type found struct {
	mu   sync.Mutex
	errs []*MemoryError
}

// add logs the *MemoryErrors in err.
func (f *found) add(err error) {
	var es []*MemoryError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var me *MemoryError
			if errors.As(e, &me) {
				es = append(es, me)
			}
		}
	} else if me := (*MemoryError)(nil); errors.As(err, &me) {
		es = append(es, me)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, es[:min(len(es), maxFound-len(f.errs))]...)
}

// list returns the logged errors, oldest first.
func (f *found) list() []*MemoryError {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*MemoryError(nil), f.errs...)
}
