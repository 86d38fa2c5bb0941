package offheap

import (
	"sync"
	"sync/atomic"

	"github.com/offheap/offheap/internal/pageheap"
)

// maxProcs is how many Ps get a per-P structure (a magazine, a quarantine
// ring). A P with a larger id (GOMAXPROCS above maxProcs) goes without:
// its calls use the central lists directly, correct, only slower.
const maxProcs = 1024

// perP is a set of per-P structures, each mapped off-heap and touched only
// by the goroutine pinned to its P: the heap's magazines, and
// a checked heap's quarantine rings. A P is given
// one the first time it needs one, and keeps it until Trim or Close takes
// every P's out of service; Trim keeps them, emptied, as spares for the
// next Ps that need one.
//
// at is read pinned and without a lock: a structure loaded from it while
// pinned stays in service until the pin ends: Close waits out pinned calls. The rest
// is guarded by mu, under which Close takes the set out of service for good.
type perP[T any] struct {
	at [maxProcs]atomic.Pointer[T] // P pid's structure; nil if it has none

	mu    sync.Mutex
	all   []*T                 // every structure ever installed: Stats and Close
	spare []*T                 // out of service and emptied, for the next P that needs one
	list  atomic.Pointer[[]*T] // all, for readers without mu (InUse)
}

// get is P pid's structure, or nil if it has none (yet, or ever: a P id at
// or above maxProcs must not alias another P's).
func (s *perP[T]) get(pid int) *T {
	if uint(pid) < maxProcs {
		return s.at[pid].Load()
	}
	return nil
}

// install gives P pid a structure if it has none: a spare, or a new one
// from make. On a closed heap it installs nothing and returns pageheap.ErrClosed:
// Close takes the set out of service under mu, after it marks the heap
// closed. Called unpinned: it may block on mu and on make's mmap.
func (s *perP[T]) install(pid int, closed *atomic.Bool, make func() (*T, error)) error {
	if uint(pid) >= maxProcs {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if closed.Load() {
		return pageheap.ErrClosed
	}
	if s.at[pid].Load() != nil {
		return nil
	}
	if k := len(s.spare); k > 0 {
		s.at[pid].Store(s.spare[k-1])
		s.spare = s.spare[:k-1]
		return nil
	}
	t, err := make()
	if err != nil {
		return err
	}
	// list only grows: an append writes only past the length of every list
	// published before, so a reader of an old list reads stable entries.
	s.all = append(s.all, t)
	list := s.all
	s.list.Store(&list)
	s.at[pid].Store(t)
	return nil
}

// takeAll takes every P's structure out of service and returns them. Once
// quiesce returns, no goroutine is using any of them.
func (s *perP[T]) takeAll() []*T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var taken []*T
	for i := range s.at {
		if t := s.at[i].Swap(nil); t != nil {
			taken = append(taken, t)
		}
	}
	return taken
}

// keep makes taken, which takeAll returned and the caller emptied, spares,
// unless the heap has closed meanwhile.
func (s *perP[T]) keep(taken []*T, closed *atomic.Bool) {
	s.mu.Lock()
	if !closed.Load() {
		s.spare = append(s.spare, taken...)
	}
	s.mu.Unlock()
}

// outOfService takes every P's structure out of service for good, for
// Close, which has marked the heap closed: no install succeeds after it.
func (s *perP[T]) outOfService() {
	s.mu.Lock()
	for i := range s.at {
		s.at[i].Store(nil)
	}
	s.spare = nil
	s.mu.Unlock()
}
