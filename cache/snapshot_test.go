package cache_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/offheap/offheap/cache"
)

func TestSnapshot(t *testing.T) {
	c := newCache(t, 8<<20)
	for i := range 5000 {
		c.Set(fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{byte(i)}, i%700))
	}
	c.SetWithTTL([]byte("ttl"), []byte("v"), time.Hour)
	c.SetWithTTL([]byte("gone"), []byte("v"), time.Nanosecond)
	path := filepath.Join(t.TempDir(), "snap")
	if err := c.SaveToFile(path); err != nil {
		t.Fatal(err)
	}
	d := newCache(t, 8<<20)
	d.Set([]byte("other"), []byte("kept"))
	if err := d.LoadFromFile(path); err != nil {
		t.Fatal(err)
	}
	if d.Len() != 5002 {
		t.Fatalf("Len after load = %d, want 5002", d.Len())
	}
	for k, v := range c.All() {
		if got, ok := d.Get(nil, k); !ok || !bytes.Equal(got, v) {
			t.Fatalf("%q: loaded %q %v, saved %q", k, got, ok, v)
		}
	}
	if d.Has([]byte("gone")) || !d.Has([]byte("ttl")) {
		t.Fatal("expiries were not kept")
	}
	// The stream form, with values that do not compress.
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 3000 {
		v := make([]byte, r.IntN(400))
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		c.Set(fmt.Appendf(nil, "r%d", i), v)
	}
	var buf bytes.Buffer
	if err := c.SaveTo(&buf); err != nil {
		t.Fatal(err)
	}
	e := newCache(t, 8<<20)
	if err := e.LoadFrom(&buf); err != nil {
		t.Fatal(err)
	}
	if e.Len() != c.Len()-1 { // all but "gone"
		t.Fatalf("Len after a stream load = %d, want %d", e.Len(), c.Len()-1)
	}
	for k, v := range c.All() {
		if got, ok := e.Get(nil, k); !ok || !bytes.Equal(got, v) {
			t.Fatalf("%q: stream-loaded %q %v, saved %q", k, got, ok, v)
		}
	}
}

func TestSnapshotCorrupt(t *testing.T) {
	c := newCache(t, 1<<20)
	for i := range 100 {
		c.Set(binary.LittleEndian.AppendUint32(nil, uint32(i)), []byte("value"))
	}
	var buf bytes.Buffer
	if err := c.SaveTo(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	for name, bad := range map[string][]byte{
		"flipped":   append(append([]byte{}, good[:100]...), append([]byte{good[100] ^ 1}, good[101:]...)...),
		"count":     append(append([]byte{}, good[:len(good)-8]...), 1, 0, 0, 0, 0, 0, 0, 0),
		"truncated": good[:len(good)-5],
		"magic":     append([]byte("NOTASNAP"), good[8:]...),
		"empty":     nil,
	} {
		d := newCache(t, 1<<20)
		d.Set([]byte("before"), []byte("the load"))
		err := d.LoadFrom(bytes.NewReader(bad))
		if !errors.Is(err, cache.ErrSnapshot) {
			t.Errorf("%s: LoadFrom = %v, want ErrSnapshot", name, err)
		}
		want := 0 // entries stored before the damage showed are dropped
		if name == "magic" || name == "empty" {
			want = 1 // the header's damage shows first: nothing is lost
		}
		if d.Len() != want {
			t.Errorf("%s: %d entries after a failed load, want %d", name, d.Len(), want)
		}
	}
}

// TestSnapshotFileCorrupt loads damaged snapshot files, which LoadFromFile
// maps: each gets ErrSnapshot. One whose damage shows before any entry is
// stored (a bad header, a file cut short anywhere: the blocks are found
// first) leaves the cache as it was; a bad checksum or count empties it.
// The whole file, the positive control, loads.
func TestSnapshotFileCorrupt(t *testing.T) {
	c := newCache(t, 1<<20)
	for i := range 3000 {
		c.Set(binary.LittleEndian.AppendUint32(nil, uint32(i)), fmt.Appendf(nil, "value %d", i*i))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "good")
	if err := c.SaveToFile(path); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	load := func(name string, b []byte) (*cache.Cache, error) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		d := newCache(t, 1<<20)
		d.Set([]byte("before"), []byte("the load"))
		return d, d.LoadFromFile(p)
	}
	if d, err := load("whole", good); err != nil || d.Len() != c.Len()+1 {
		t.Fatalf("the whole file: LoadFromFile = %v, %d entries, want nil, %d", err, d.Len(), c.Len()+1)
	}
	bad := map[string][]byte{
		"flipped": append(append([]byte{}, good[:len(good)/2]...), append([]byte{good[len(good)/2] ^ 1}, good[len(good)/2+1:]...)...),
		"count":   append(append([]byte{}, good[:len(good)-8]...), 1, 0, 0, 0, 0, 0, 0, 0),
		"version": append(append(append([]byte{}, good[:8]...), 9, 0, 0, 0), good[12:]...),
		"empty":   nil,
	}
	for _, cut := range []int{3, 24, 25, 40, len(good) / 3, len(good) - 12, len(good) - 1} {
		bad[fmt.Sprint("cut at ", cut)] = good[:cut]
	}
	for name, b := range bad {
		d, err := load(name, b)
		if !errors.Is(err, cache.ErrSnapshot) {
			t.Errorf("%s: LoadFromFile = %v, want ErrSnapshot", name, err)
		}
		want := 1 // the entry set before the load
		if name == "flipped" || name == "count" {
			want = 0
		}
		if d.Len() != want {
			t.Errorf("%s: %d entries after a failed load, want %d", name, d.Len(), want)
		}
	}
}

// TestSnapshotEmptyFile saves an empty cache and loads the file, which has
// no blocks, into a cache whose entry it keeps.
func TestSnapshotEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty")
	if err := newCache(t, 1<<20).SaveToFile(path); err != nil {
		t.Fatal(err)
	}
	d := newCache(t, 1<<20)
	d.Set([]byte("before"), []byte("the load"))
	if err := d.LoadFromFile(path); err != nil || d.Len() != 1 {
		t.Fatalf("LoadFromFile = %v with %d entries, want nil with 1", err, d.Len())
	}
}

// TestLoadCutShortBigBlock: a stream whose header allows blocks of 2 GiB
// and whose first block claims nearly that, then ends, is refused having
// allocated about what it held, not what it claimed. Before, the claim
// was allocated whole before the first byte was read.
func TestLoadCutShortBigBlock(t *testing.T) {
	var good bytes.Buffer
	c := newCache(t, 1<<20)
	if err := c.SaveTo(&good); err != nil {
		t.Fatal(err)
	}
	hdr := append([]byte{}, good.Bytes()[:24]...)
	binary.LittleEndian.PutUint32(hdr[12:], 1<<31) // the largest block
	snap := binary.LittleEndian.AppendUint32(hdr, 1<<31-1)
	snap = append(snap, make([]byte, 100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := c.LoadFrom(bytes.NewReader(snap))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, cache.ErrSnapshot) {
		t.Fatalf("LoadFrom = %v, want an ErrSnapshot", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("a block cut short after 100 bytes allocated %d MiB", got>>20)
	}
}
