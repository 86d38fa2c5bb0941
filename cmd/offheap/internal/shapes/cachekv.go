package shapes

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

// What the cache shapes share: a way per key-value arm (internal/kvarms),
// those arms as names -arms takes, the keys, and the workers' state.

// cacheShapes names every shape whose rows are the key-value arms: -arms
// with an arm's name selects its row in these, and in no other shape.
var cacheShapes = []string{"cache", "cache-block", "cache-hit", "cache-mem", "cache-big", "cache-snapshot"}

func init() {
	for _, a := range kvarms.All() {
		bench.RegisterArm(bench.Arm{
			Name: a.Name,
			Doc:  "key-value cache, a row of the cache shapes only: " + a.Doc,
			Only: cacheShapes,
			New:  func() (bench.Allocator, error) { return notAllocator{a.Name}, nil },
		})
	}
}

// notAllocator is what a key-value arm's bench.Arm makes: it is there so
// that -arms can name the arm, whose row in a cache shape is a way of that
// shape; no shape allocates from it.
type notAllocator struct{ name string }

func (n notAllocator) Alloc(int) []byte {
	panic(fmt.Sprintf("offheap bench: %s is a key-value cache, not an allocator; it runs only in the cache shapes", n.name))
}

func (n notAllocator) Free([]byte) { n.Alloc(0) }

// kvShape registers a shape whose ways are the key-value arms, each running
// run with a fresh instance (run makes it, from the arm, with the sizes it
// needs). With -arms, the named key-value arms are its rows.
func kvShape(spec bench.Spec, run func(t *bench.Trial, arm kvarms.Arm) (bench.Sample, error), only func(kvarms.Arm) bool) {
	var ways []bench.Way
	for _, a := range kvarms.All() {
		if only != nil && !only(a) {
			continue
		}
		ways = append(ways, bench.Way{Name: a.Name, Doc: a.Doc, Run: func(t *bench.Trial) (bench.Sample, error) {
			return run(t, a)
		}})
	}
	bench.RegisterWayShape(bench.WayShape{
		Spec: spec,
		Ways: ways,
		Arms: func(*bench.Trial, bench.Allocator) (bench.Sample, error) {
			return bench.Sample{}, fmt.Errorf("an allocator arm cannot join a cache shape")
		},
		Joins: func(bench.Allocator) bool { return false },
	})
}

// newKV makes a fresh instance of arm for a trial.
func newKV(arm kvarms.Arm, o kvarms.Options) (kvarms.Cache, error) {
	c, err := arm.New(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", arm.Name, err)
	}
	return c, nil
}

// keySet is n keys of one size in one slab, made before any timed loop.
type keySet struct {
	b    []byte
	size int
}

// key returns key i, capacity capped so that no arm can append into the
// next key.
func (ks *keySet) key(i int) []byte {
	return ks.b[i*ks.size : (i+1)*ks.size : (i+1)*ks.size]
}

// The key formats of the peers' own benchmarks.
const (
	keyLE4    = "le4"   // fastcache: the key number's 4 bytes, little-endian
	keyPrefix = "key14" // bigcache: "key-" and 10 digits
	keyPad16  = "pad16" // phuslu/lru: the number right-aligned in 16 columns
	keyHex16  = "hex16" // the big shapes: 16 hex digits of a mixed number
)

// makeKeys returns n keys in format.
func makeKeys(n int, format string) *keySet {
	size := map[string]int{keyLE4: 4, keyPrefix: 14, keyPad16: 16, keyHex16: 16}[format]
	ks := &keySet{b: make([]byte, 0, n*size), size: size}
	for i := range n {
		switch format {
		case keyLE4:
			ks.b = binary.LittleEndian.AppendUint32(ks.b, uint32(i))
		case keyPrefix:
			ks.b = fmt.Appendf(ks.b, "key-%010d", i)
		case keyPad16:
			ks.b = fmt.Appendf(ks.b, "%16d", i)
		case keyHex16:
			ks.b = fmt.Appendf(ks.b, "%016x", uint64(i)*0x9E3779B97F4A7C15)
		}
	}
	return ks
}

// valueBytes is a pattern that values are sliced from: what an arm copies
// in is data, not zeros that a page could share.
var valueBytes = func() []byte {
	b := make([]byte, 1<<17)
	r := bench.NewRand(3)
	for i := range b {
		b[i] = byte(r.Next())
	}
	return b
}()

// value returns n bytes of the pattern for key number i.
func value(i, n int) []byte {
	off := (i * 64) % (len(valueBytes) - n + 1)
	return valueBytes[off : off+n : off+n]
}

// kvWorker is one worker's state in a cache shape: what its loop counts,
// and the buffer Get appends to, on cache lines of its own.
type kvWorker struct {
	hits, gets, sets int64
	dst              []byte
	lat              []int64 // sampled Get latencies, in ns, where the shape times them
	_                [128 - (3*8+2*unsafe.Sizeof([]byte(nil)))%128]byte
}

// A kvWorker fills whole cache line pairs (an index out of range if not).
var _ = [1]struct{}{}[unsafe.Sizeof(kvWorker{})%128]

// kvWorkers returns n workers, each with a Get buffer of dstCap bytes.
func kvWorkers(n, dstCap int) []kvWorker {
	ws := make([]kvWorker, n)
	for i := range ws {
		ws[i].dst = make([]byte, 0, dstCap)
	}
	return ws
}

// hitPct is the workers' Gets that hit, in percent.
func hitPct(ws []kvWorker) float64 {
	var hits, gets int64
	for i := range ws {
		hits += ws[i].hits
		gets += ws[i].gets
	}
	if gets == 0 {
		return 0
	}
	return 100 * float64(hits) / float64(gets)
}
