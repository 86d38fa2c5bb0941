package cache

// Locking a shard. A shard's lock is a sync.Mutex: Gets on a cache that
// owns its heap take no lock at all (readers.go), so what holds the lock is
// mostly writers, and a Mutex costs a writer two atomic operations where a
// sync.RWMutex's write lock costs four. The reads that do take it (View,
// Has, a Get that falls back, every Get of a cache on another heap or in a
// race or checked build) hold it only to find and copy (or, for View, to
// run its function), and take it in turn.
//
// A read tries the lock a while before waiting on it. A goroutine that
// waits on a sync.Mutex parks, and the scheduler wakes it much later than
// the holder lets go: under a mix of Gets and Sets a read that meets a Set
// would wait as long as that. Holds are short (a Set evicts or compacts at
// most a segment under the lock), so trying the lock again after yielding
// the processor takes it in most meetings; after lockTries, the call waits
// as before, so a long hold costs only the tries.

import (
	"runtime"
)

const lockTries = 64

// lock locks the shard to change it, and makes seq odd until unlock, for
// the reads that take no lock: every call that changes the index, the
// segments or the records locks with lock; a holder of mu that changes
// nothing (a read, Len, Stats, a snapshot) takes mu itself. A writer does
// not retry: sync.Mutex spins before it parks, and a writer retrying
// TryLock keeps the lock's line moving between cores while the holder
// works, which slows a mix of Sets and Gets more than the parked writers'
// wakeups cost.
func (s *shard) lock() {
	s.mu.Lock()
	s.opened()
}

// tryLock is lock where the shard's mutex is free, for a writer that holds
// another shard's lock: it must not wait, since the holder of this one
// may be waiting for its.
func (s *shard) tryLock() bool {
	if !s.mu.TryLock() {
		return false
	}
	s.opened()
	return true
}

// opened makes seq odd, under a lock just taken.
func (s *shard) opened() {
	s.seq.Add(1)
	// The changes that follow must not be seen before seq is odd. On arm64
	// the Add's store is a release, which orders what comes before it, not
	// after; a load-acquire after a store-release is ordered after it, and
	// what follows the load after the load, so this load is the fence a
	// seqlock's writer needs there (on amd64 it costs a plain load). Its
	// value is checked so that the compiler keeps it.
	if s.seq.Load()&1 == 0 {
		panic("offheap: cache: a shard's seq is even under its write lock: two writers at once")
	}
}

// unlock ends lock.
func (s *shard) unlock() {
	s.seq.Add(1)
	s.mu.Unlock()
}

// rlock locks the shard to read it, trying lockTries times first.
func (s *shard) rlock() {
	for range lockTries {
		if s.mu.TryLock() {
			return
		}
		runtime.Gosched()
	}
	s.mu.Lock()
}
