// Package kvarms holds the key-value caches the cache shapes of `offheap
// bench` compare, one file each: offheap's cache package, the peers Go
// programs use today (fastcache, bigcache, freecache, otter, ristretto,
// golang-lru), a map under a sync.RWMutex, the floor (the leanest cache that
// does the job) and the nocache arm (the shapes' loop with no cache, so that
// the harness's own cost shows). Each file registers its arm in init.
//
// They are a different kind of arm from internal/arms' allocators: a shape
// asks them to keep keys and values, not to hand out blocks, so they share
// the small Cache interface instead of bench.Allocator.
package kvarms

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"
)

// Cache is what every key-value arm provides: the calls of offheap's cache
// package, which the peers' own calls are adapted to.
type Cache interface {
	// Set stores a copy of v under a copy of k; the arm may evict.
	Set(k, v []byte)
	// Get appends k's value to dst, and reports whether k was there.
	Get(dst, k []byte) ([]byte, bool)
	Delete(k []byte)
	// Close gives back what the arm holds; the Cache is not used after.
	Close() error
}

// Options size a new arm.
type Options struct {
	// MaxBytes is the budget: what the byte-bounded arms may hold.
	MaxBytes int
	// Entries is how many entries fit the budget at the shape's key and
	// value sizes: the capacity of the arms bounded by a count of entries
	// (golang-lru, the map), and a sizing hint for the others.
	Entries int
	// EntryBytes is the shape's mean key plus value size, a sizing hint.
	EntryBytes int
}

// Arm is one key-value cache under test.
type Arm struct {
	Name string // the way= key in results.txt, and the name -arms takes
	Doc  string // one line for -h
	// GoHeap marks an arm whose entries are objects or slabs of the Go
	// heap (the big cache shape compares offheap's Get latency with the
	// best of these).
	GoHeap bool
	// Peer marks a published cache that a figure is judged against (not
	// the map, the floor or nocache).
	Peer bool
	// Evicts is false for an arm that keeps nothing (nocache) or evicts by no
	// policy of its own: the hit ratio shapes leave it out.
	Evicts bool
	New    func(o Options) (Cache, error)
	// Load, for an arm with snapshots, makes a cache from what the
	// Cache's SaveToFile (Saver) wrote at path.
	Load func(path string, o Options) (Cache, error)
}

// Saver is implemented by the caches of arms with snapshots (Arm.Load).
type Saver interface {
	SaveToFile(path string) error
}

// Mapped is implemented by arms that hold memory outside the Go heap that
// they can count, which stays resident after Close (fastcache keeps its
// freed chunks for the next instance and never unmaps them: a later
// instance's RSS growth misses them). The memory shapes take the larger of
// the RSS growth and this count plus the Go heap's growth.
type Mapped interface {
	MappedBytes() uint64
}

// Settler is implemented by arms whose Sets take effect later (ristretto
// buffers them): Settle returns once every Set made so far is applied. The
// shapes call it after filling a cache, before the timed loop, so that a
// shape of all hits is one.
type Settler interface {
	Settle()
}

// Settle calls c's Settle, where it has one.
func Settle(c Cache) {
	if s, ok := c.(Settler); ok {
		s.Settle()
	}
}

var registry struct {
	sync.Mutex
	arms []Arm
}

// order sorts the arms in tables: offheap's cache first (every table's
// ratio column is against it), the peers, then the references.
var order = []string{"offheap-kv", "fastcache", "bigcache", "freecache", "otter", "ristretto", "golang-lru",
	"rwmap", "floor", "nocache"}

func rank(name string) int {
	for i, n := range order {
		if n == name {
			return i
		}
	}
	return len(order)
}

// Register adds an arm. It panics on a duplicate or incomplete one: a
// programming error found at start-up.
func Register(a Arm) {
	registry.Lock()
	defer registry.Unlock()
	if a.Name == "" || a.New == nil {
		panic("kvarms: Register needs a Name and a New")
	}
	for _, b := range registry.arms {
		if b.Name == a.Name {
			panic(fmt.Sprintf("kvarms: arm %q registered twice", a.Name))
		}
	}
	registry.arms = append(registry.arms, a)
	sort.SliceStable(registry.arms, func(i, j int) bool { return rank(registry.arms[i].Name) < rank(registry.arms[j].Name) })
}

// All returns every arm, offheap's cache first.
func All() []Arm {
	registry.Lock()
	defer registry.Unlock()
	return append([]Arm(nil), registry.arms...)
}

// Named returns the arm named name.
func Named(name string) (Arm, bool) {
	for _, a := range All() {
		if a.Name == name {
			return a, true
		}
	}
	return Arm{}, false
}

// str is k as a string without a copy, for the peers that take string keys
// in calls that do not keep the key (a lookup, a delete, bigcache's Set,
// which copies the key into its own buffer).
func str(k []byte) string {
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// clone copies b: the peers that keep Go values keep what Set is given,
// and the shapes reuse their buffers.
func clone(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}
