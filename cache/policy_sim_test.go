package cache_test

// A simulator of eviction policies on synthetic traces, for the comparison
// in docs/DESIGN.md (The cache package):
//
//	go test -run XXX -bench Policies -benchtime 1x ./cache
//
// Each policy holds a fixed number of entries; the cache itself is measured
// by filling a one-shard cache of equal-sized entries and counting its Stats.

import (
	"container/list"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/offheap/offheap/cache"
)

// zipf draws keys 0..n-1 with P(k) proportional to 1/(k+1)^s, s may be < 1.
type zipf struct {
	cdf []float64
	r   *rand.Rand
}

func newZipf(n int, s float64, seed uint64) *zipf {
	z := &zipf{cdf: make([]float64, n), r: rand.New(rand.NewPCG(seed, 7))}
	sum := 0.0
	for i := range n {
		sum += 1 / math.Pow(float64(i+1), s)
		z.cdf[i] = sum
	}
	for i := range z.cdf {
		z.cdf[i] /= sum
	}
	return z
}

func (z *zipf) next() uint64 { return uint64(sort.SearchFloat64s(z.cdf, z.r.Float64())) }

// trace is a Zipf(0.99) trace over keys keys; with scans, every scanEvery
// requests a sequential scan of scanLen keys never seen before.
func trace(n, keys int, scans bool) []uint64 {
	z := newZipf(keys, 0.99, 1)
	t := make([]uint64, 0, n)
	next := uint64(keys)
	for len(t) < n {
		if scans && len(t)%100000 == 0 && len(t) > 0 {
			for range keys / 5 {
				t = append(t, next)
				next++
			}
		}
		t = append(t, z.next())
	}
	return t
}

type policy interface{ access(k uint64) bool }

// lru is least-recently-used.
type lru struct {
	cap int
	l   *list.List
	m   map[uint64]*list.Element
}

func newLRU(n int) *lru { return &lru{cap: n, l: list.New(), m: map[uint64]*list.Element{}} }
func (p *lru) access(k uint64) bool {
	if e, ok := p.m[k]; ok {
		p.l.MoveToFront(e)
		return true
	}
	if p.l.Len() >= p.cap {
		delete(p.m, p.l.Remove(p.l.Back()).(uint64))
	}
	p.m[k] = p.l.PushFront(k)
	return false
}

// sieve is SIEVE (Zhang et al., NSDI 2024): a FIFO with a visited bit and a
// hand that moves from the tail toward the head.
type sieve struct {
	cap  int
	l    *list.List
	m    map[uint64]*list.Element
	vis  map[uint64]bool
	hand *list.Element
}

func newSIEVE(n int) *sieve {
	return &sieve{cap: n, l: list.New(), m: map[uint64]*list.Element{}, vis: map[uint64]bool{}}
}
func (p *sieve) access(k uint64) bool {
	if _, ok := p.m[k]; ok {
		p.vis[k] = true
		return true
	}
	if p.l.Len() >= p.cap {
		h := p.hand
		if h == nil {
			h = p.l.Back()
		}
		for p.vis[h.Value.(uint64)] {
			p.vis[h.Value.(uint64)] = false
			if h = h.Prev(); h == nil {
				h = p.l.Back()
			}
		}
		p.hand = h.Prev()
		v := h.Value.(uint64)
		p.l.Remove(h)
		delete(p.m, v)
		delete(p.vis, v)
	}
	p.m[k] = p.l.PushFront(k)
	return false
}

// s3fifo is S3-FIFO (Yang et al., SOSP 2023): a small FIFO (10%), a main
// FIFO with 2-bit frequencies, and a ghost FIFO of keys evicted from small.
type s3fifo struct {
	smallCap, mainCap int
	small, main       []uint64
	freq              map[uint64]int
	inSmall, inMain   map[uint64]bool
	ghost             []uint64
	ghostSet          map[uint64]bool
}

func newS3FIFO(n int) *s3fifo {
	s := max(1, n/10)
	return &s3fifo{smallCap: s, mainCap: n - s, freq: map[uint64]int{}, inSmall: map[uint64]bool{},
		inMain: map[uint64]bool{}, ghostSet: map[uint64]bool{}}
}
func (p *s3fifo) access(k uint64) bool {
	if p.inSmall[k] || p.inMain[k] {
		p.freq[k] = min(p.freq[k]+1, 3)
		return true
	}
	if p.ghostSet[k] {
		delete(p.ghostSet, k)
		p.insertMain(k)
	} else {
		for len(p.small) >= p.smallCap {
			p.evictSmall()
		}
		p.small = append(p.small, k)
		p.inSmall[k] = true
	}
	p.freq[k] = 0
	return false
}
func (p *s3fifo) evictSmall() {
	k := p.small[0]
	p.small = p.small[1:]
	delete(p.inSmall, k)
	if p.freq[k] > 0 {
		p.insertMain(k)
		return
	}
	delete(p.freq, k)
	p.ghost = append(p.ghost, k)
	p.ghostSet[k] = true
	for len(p.ghost) > p.mainCap {
		delete(p.ghostSet, p.ghost[0])
		p.ghost = p.ghost[1:]
	}
}
func (p *s3fifo) insertMain(k uint64) {
	for len(p.main) >= p.mainCap {
		v := p.main[0]
		p.main = p.main[1:]
		if f := p.freq[v]; f > 0 {
			p.freq[v] = f - 1
			p.main = append(p.main, v)
			continue
		}
		delete(p.inMain, v)
		delete(p.freq, v)
	}
	p.main = append(p.main, k)
	p.inMain[k] = true
	p.freq[k] = 0
}

// tinylfu is W-TinyLFU (Einziger et al.): a 1% LRU window, an LRU main
// area, and admission from the window to main by a 4-row count-min sketch
// of 4-bit counters, halved every 10 times the capacity in accesses.
type tinylfu struct {
	window, main *lru
	sketch       [4][]uint8
	adds, reset  int
}

func newTinyLFU(n int) *tinylfu {
	w := max(1, n/100)
	t := &tinylfu{window: newLRU(w), main: newLRU(n - w), reset: 10 * n}
	for i := range t.sketch {
		t.sketch[i] = make([]uint8, 4*n)
	}
	return t
}
func (t *tinylfu) idx(k uint64, i int) int {
	h := (k + uint64(i)*0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9
	return int((h ^ h>>31) % uint64(len(t.sketch[i])))
}
func (t *tinylfu) estimate(k uint64) uint8 {
	m := uint8(15)
	for i := range t.sketch {
		m = min(m, t.sketch[i][t.idx(k, i)])
	}
	return m
}
func (t *tinylfu) add(k uint64) {
	for i := range t.sketch {
		if c := &t.sketch[i][t.idx(k, i)]; *c < 15 {
			*c++
		}
	}
	if t.adds++; t.adds >= t.reset {
		t.adds = 0
		for i := range t.sketch {
			for j := range t.sketch[i] {
				t.sketch[i][j] /= 2
			}
		}
	}
}
func (t *tinylfu) access(k uint64) bool {
	t.add(k)
	if e, ok := t.main.m[k]; ok {
		t.main.l.MoveToFront(e)
		return true
	}
	if e, ok := t.window.m[k]; ok {
		t.window.l.MoveToFront(e)
		return true
	}
	if t.window.l.Len() < t.window.cap {
		t.window.m[k] = t.window.l.PushFront(k)
		return false
	}
	cand := t.window.l.Remove(t.window.l.Back()).(uint64)
	delete(t.window.m, cand)
	t.window.m[k] = t.window.l.PushFront(k)
	if t.main.l.Len() < t.main.cap {
		t.main.m[cand] = t.main.l.PushFront(cand)
		return false
	}
	victim := t.main.l.Back().Value.(uint64)
	if t.estimate(cand) > t.estimate(victim) {
		t.main.l.Remove(t.main.l.Back())
		delete(t.main.m, victim)
		t.main.m[cand] = t.main.l.PushFront(cand)
	}
	return false
}

// thisCache runs the trace through a one-shard cache and returns its hit
// ratio and the number of entries it held.
func thisCache(b *testing.B, tr []uint64, entries int) (float64, int) {
	// Entries of 16-byte keys and 16-byte values take 48-byte blocks; the
	// index takes up to 16 bytes more each. Size the cache to hold entries.
	c, err := cache.New(cache.Options{MaxBytes: max(cache.MinBytes, int64(entries)*(48+12)*16/15), Shards: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	k, v := make([]byte, 16), make([]byte, 16)
	var buf []byte
	for _, x := range tr {
		binary.LittleEndian.PutUint64(k, x)
		var ok bool
		if buf, ok = c.Get(buf[:0], k); !ok {
			c.Set(k, v)
		}
	}
	st := c.Stats()
	return float64(st.Hits) / float64(st.Hits+st.Misses), c.Len()
}

func BenchmarkPolicies(b *testing.B) {
	const keys, n = 100000, 2000000
	for _, scans := range []bool{false, true} {
		tr := trace(n, keys, scans)
		for _, size := range []int{keys / 100, keys / 10} {
			name := fmt.Sprintf("zipf0.99/scans=%v/entries=%d", scans, size)
			b.Run(name, func(b *testing.B) {
				ours, held := thisCache(b, tr, size)
				b.ReportMetric(100*ours, "cache-hit%")
				b.ReportMetric(float64(held), "cache-entries")
				for _, p := range []struct {
					name string
					p    policy
				}{{"lru", newLRU(held)}, {"sieve", newSIEVE(held)}, {"s3fifo", newS3FIFO(held)}, {"wtinylfu", newTinyLFU(held)}} {
					hits := 0
					for _, x := range tr {
						if p.p.access(x) {
							hits++
						}
					}
					b.ReportMetric(100*float64(hits)/float64(len(tr)), p.name+"-hit%")
				}
			})
		}
	}
}
