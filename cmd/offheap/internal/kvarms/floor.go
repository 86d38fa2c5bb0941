package kvarms

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sync"
	"unsafe"
)

func init() {
	Register(Arm{
		Name: "floor",
		Doc: "the leanest cache that does the job, for what is reachable: 256 shards, each a map[uint64]uint32 from " +
			"a key's hash to its entry in a pointer-free byte arena; no policy: a full shard starts over empty",
		New: newFloor,
	})
}

// floorShards is a power of two; a key's shard is its hash's top bits.
const (
	floorShards     = 256
	floorShardShift = 64 - 8
	floorHeader     = 6 // uint16 key length, uint32 value length
)

// floorShard is one lock's worth of the floor: a hash index into an arena
// of entries, each its header, key and value. An entry is rewritten in
// place when a Set keeps its sizes and appended otherwise; the arena is
// never compacted, and a Set that does not fit empties the shard.
type floorShard struct {
	mu    sync.RWMutex
	m     map[uint64]uint32
	arena []byte
	_     [cacheLine - (unsafe.Sizeof(sync.RWMutex{})+unsafe.Sizeof(map[uint64]uint32(nil))+unsafe.Sizeof([]byte(nil)))%cacheLine]byte
}

// cacheLine covers a cache line and the adjacent-line prefetcher's pair:
// no two shards' locks share one.
const cacheLine = 128

// A floorShard fills whole cache lines (an index out of range if not).
var _ = [1]struct{}{}[unsafe.Sizeof(floorShard{})%cacheLine]

type floor struct {
	seed     maphash.Seed
	shardCap int
	shards   [floorShards]floorShard
}

func newFloor(o Options) (Cache, error) {
	f := &floor{seed: maphash.MakeSeed(), shardCap: min(max(o.MaxBytes/floorShards, 64<<10), math.MaxInt32)}
	for i := range f.shards {
		f.shards[i].m = map[uint64]uint32{}
	}
	return f, nil
}

func (f *floor) shard(k []byte) (*floorShard, uint64) {
	h := maphash.Bytes(f.seed, k)
	return &f.shards[h>>floorShardShift], h
}

func (f *floor) Set(k, v []byte) {
	n := floorHeader + len(k) + len(v)
	if len(k) > 1<<16-1 || n > f.shardCap {
		return
	}
	s, h := f.shard(k)
	s.mu.Lock()
	if off, ok := s.m[h]; ok {
		e := s.arena[off:]
		if int(binary.LittleEndian.Uint16(e)) == len(k) && int(binary.LittleEndian.Uint32(e[2:])) == len(v) {
			copy(e[floorHeader:], k)
			copy(e[floorHeader+len(k):], v)
			s.mu.Unlock()
			return
		}
	}
	if s.arena == nil {
		s.arena = make([]byte, 0, f.shardCap)
	}
	if len(s.arena)+n > cap(s.arena) {
		clear(s.m)
		s.arena = s.arena[:0]
	}
	off := len(s.arena)
	s.arena = binary.LittleEndian.AppendUint16(s.arena, uint16(len(k)))
	s.arena = binary.LittleEndian.AppendUint32(s.arena, uint32(len(v)))
	s.arena = append(append(s.arena, k...), v...)
	s.m[h] = uint32(off)
	s.mu.Unlock()
}

func (f *floor) Get(dst, k []byte) ([]byte, bool) {
	s, h := f.shard(k)
	s.mu.RLock()
	off, ok := s.m[h]
	if ok {
		e := s.arena[off:]
		kl := int(binary.LittleEndian.Uint16(e))
		vl := int(binary.LittleEndian.Uint32(e[2:]))
		if ok = string(e[floorHeader:floorHeader+kl]) == string(k); ok {
			dst = append(dst, e[floorHeader+kl:floorHeader+kl+vl]...)
		}
	}
	s.mu.RUnlock()
	return dst, ok
}

func (f *floor) Delete(k []byte) {
	s, h := f.shard(k)
	s.mu.Lock()
	delete(s.m, h)
	s.mu.Unlock()
}

func (f *floor) Close() error {
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		s.m, s.arena = nil, nil
		s.mu.Unlock()
	}
	return nil
}
