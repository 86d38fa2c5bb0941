package offheap_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/offheap/offheap"
)

// A map from keys to Refs holds no pointers, so the garbage collector never
// scans it, however many values it indexes; the values themselves are
// off-heap. This is the pattern of docs/storing-values.md, for one
// goroutine: get's slice is valid until the next set of its key frees it.
// With goroutines, see ExampleRef_concurrent.
func ExampleRef() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	index := make(map[uint64]offheap.Ref)
	set := func(k uint64, v string) {
		if old, ok := index[k]; ok {
			h.FreeRef(old)
		}
		b := h.Alloc(len(v))
		copy(b, v)
		index[k] = h.Ref(b)
	}
	get := func(k uint64) ([]byte, bool) {
		r, ok := index[k]
		if !ok {
			return nil, false
		}
		return h.Bytes(r), true
	}

	set(1, "one")
	set(2, "two")
	set(1, "uno")
	v, _ := get(1)
	fmt.Printf("%s\n", v)
	_, ok := get(3)
	fmt.Println(ok)

	for k, r := range index {
		h.FreeRef(r)
		delete(index, k)
	}
	fmt.Println("live blocks:", h.Stats().LiveBlocks)
	// Output:
	// uno
	// false
	// live blocks: 0
}

// With goroutines that set and delete, a get must not return the value's
// slice: once the lock is released, a set or delete on another goroutine
// may free the block, and the caller would read freed memory, perhaps the
// next owner's bytes. Checked mode does not see such a read (it finds
// writes after free); the race detector does. So get copies the value out
// under the lock, and view lets a function use the bytes in place while it
// holds the lock.
func ExampleRef_concurrent() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	var mu sync.RWMutex
	index := make(map[uint64]offheap.Ref)
	// put stores v under k (nil deletes k) and frees the value it replaces,
	// after the lock: no reader holds its bytes outside the lock.
	put := func(k uint64, v []byte) {
		var r offheap.Ref
		if v != nil {
			b := h.Alloc(len(v))
			copy(b, v)
			r = h.Ref(b)
		}
		mu.Lock()
		old, had := index[k]
		if v != nil {
			index[k] = r
		} else {
			delete(index, k)
		}
		mu.Unlock()
		if had {
			h.FreeRef(old)
		}
	}
	get := func(k uint64, dst []byte) ([]byte, bool) {
		mu.RLock()
		defer mu.RUnlock()
		r, ok := index[k]
		if !ok {
			return dst, false
		}
		return append(dst, h.Bytes(r)...), true // a copy: the block may be freed after RUnlock
	}
	view := func(k uint64, f func(v []byte)) bool { // f must not keep v
		mu.RLock()
		defer mu.RUnlock()
		r, ok := index[k]
		if ok {
			f(h.Bytes(r))
		}
		return ok
	}

	var wg sync.WaitGroup
	var torn atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			var buf []byte
			for i := range 1000 {
				switch i % 3 {
				case 0: // a value of one letter per writer, its length varying
					put(1, bytes.Repeat([]byte{'a' + byte(w)}, 8+i%64))
				case 1:
					v, ok := get(1, buf[:0])
					for _, c := range v {
						if ok && c != v[0] { // a value freed and written again while read
							torn.Add(1)
							break
						}
					}
					buf = v
				case 2:
					put(1, nil)
				}
			}
		})
	}
	wg.Wait()
	put(1, nil)
	put(2, []byte("two"))
	view(2, func(v []byte) { fmt.Printf("%s\n", v) })
	put(2, nil)
	fmt.Println("torn values:", torn.Load(), "live blocks:", h.Stats().LiveBlocks)
	// Output:
	// two
	// torn values: 0 live blocks: 0
}

// String keys would make the map scanned again (a string holds a pointer),
// so this cache keys its map by a 64-bit hash of the key and keeps the key
// beside the value, off-heap, to check it on lookup. As in bigcache, two keys
// with one hash replace each other (about one pair in 2^64), which suits a
// cache; a store that must keep every key needs a second map for those.
func ExampleRef_stringKeys() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	seed := maphash.MakeSeed()
	index := make(map[uint64]offheap.Ref) // no pointers: never scanned
	del := func(key string) {
		k := maphash.String(seed, key)
		if r, ok := index[k]; ok {
			h.FreeRef(r)
			delete(index, k)
		}
	}
	set := func(key string, value []byte) {
		del(key) // or the other key with its hash
		// The block: the key's length, the key, the value.
		b := h.Alloc(4 + len(key) + len(value))
		binary.LittleEndian.PutUint32(b, uint32(len(key)))
		copy(b[4:], key)
		copy(b[4+len(key):], value)
		index[maphash.String(seed, key)] = h.Ref(b)
	}
	get := func(key string) ([]byte, bool) {
		r, ok := index[maphash.String(seed, key)]
		if !ok {
			return nil, false
		}
		b := h.Bytes(r)
		n := binary.LittleEndian.Uint32(b)
		if string(b[4:4+n]) != key { // another key with the same hash
			return nil, false
		}
		return b[4+n:], true
	}

	set("alpha", []byte("first"))
	set("beta", []byte("second"))
	v, ok := get("alpha")
	fmt.Printf("%s %v\n", v, ok)
	_, ok = get("gamma")
	fmt.Println(ok)
	del("alpha")
	del("beta")
	fmt.Println("live blocks:", h.Stats().LiveBlocks)
	// Output:
	// first true
	// false
	// live blocks: 0
}

// Ref takes a slice Alloc returned, or a prefix of one, and Bytes gives it
// back with the same length.
func ExampleHeap_Ref() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	b := h.Alloc(11)
	copy(b, "hello world")
	whole, prefix := h.Ref(b), h.Ref(b[:5])
	fmt.Printf("%s|%s\n", h.Bytes(whole), h.Bytes(prefix))
	fmt.Println(whole == h.Ref(b), whole == prefix)

	// b[6:] does not start a block: Ref refuses it, as Free would.
	func() {
		defer func() { fmt.Println(recover() != nil) }()
		h.Ref(b[6:])
	}()
	h.Free(b)
	// Output:
	// hello world|hello
	// true false
	// true
}

// Refs can be kept in off-heap memory too: here a table of them, from
// MakeSlice.
func ExampleHeap_Bytes() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	table := offheap.MakeSlice[offheap.Ref](h, 3)
	for i, s := range []string{"a", "bb", "ccc"} {
		b := h.Alloc(len(s))
		copy(b, s)
		table[i] = h.Ref(b)
	}
	for _, r := range table {
		fmt.Printf("%s ", h.Bytes(r))
		h.FreeRef(r)
	}
	fmt.Println()
	offheap.FreeSlice(h, table)
	// Output:
	// a bb ccc
}

// The zero Ref, what a map returns for a missing key, names no block; the
// Ref of an empty value is not zero.
func ExampleRef_IsZero() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	m := map[string]offheap.Ref{"empty": h.Ref(h.Alloc(0))}
	fmt.Println(m["missing"].IsZero(), m["empty"].IsZero(), len(h.Bytes(m["empty"])))
	// Output:
	// true false 0
}

// Len is the length of the value without resolving the Ref: for sizing, or
// for a cache's accounting.
func ExampleRef_Len() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	b := h.Alloc(100)
	r := h.Ref(b[:42])
	fmt.Println(r.Len(), len(h.Bytes(r)))
	h.Free(b)
	// Output:
	// 42 42
}
