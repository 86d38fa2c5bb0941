package kvarms

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// TestArms: every arm but nocache keeps what it is given, replaces a value
// of another size, forgets a deleted key, and reads correctly from several
// goroutines at once.
func TestArms(t *testing.T) {
	for _, a := range All() {
		t.Run(a.Name, func(t *testing.T) {
			c, err := a.New(Options{MaxBytes: 32 << 20, Entries: 1000, EntryBytes: 40})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			key := func(i int) []byte { return fmt.Appendf(nil, "key-%06d", i) }
			val := func(i, gen int) []byte { return bytes.Repeat([]byte{byte(i), byte(gen)}, 8+i%24) }
			for i := range 1000 {
				c.Set(key(i), val(i, 0))
			}
			for i := range 1000 {
				if i%2 == 0 {
					c.Set(key(i), val(i, 1)[:3+i%5]) // another size
				}
			}
			c.Delete(key(7))
			Settle(c)
			if a.Name == "nocache" {
				if _, ok := c.Get(nil, key(1)); ok {
					t.Fatal("nocache found a key")
				}
				return
			}
			var wg sync.WaitGroup
			errs := make(chan error, 1000)
			for w := range 4 {
				wg.Go(func() {
					dst := []byte("prefix")
					for i := w; i < 1000; i += 4 {
						want := val(i, 0)
						if i%2 == 0 {
							want = val(i, 1)[:3+i%5]
						}
						got, ok := c.Get(dst, key(i))
						switch {
						case i == 7 && ok:
							errs <- fmt.Errorf("key 7 found after Delete")
						case i == 7:
						case a.Name == "ristretto" && (!ok || bytes.Equal(got, append([]byte("prefix"), val(i, 0)...))):
							// ristretto drops a Set when its buffers are
							// full, and TinyLFU may turn a new key away.
						case !ok:
							errs <- fmt.Errorf("key %d missing", i)
						case !bytes.Equal(got, append([]byte("prefix"), want...)):
							errs <- fmt.Errorf("key %d: %q, want prefix and %q", i, got, want)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestFloorStartsOver: a floor shard too full for a Set empties itself and
// keeps the new entry.
func TestFloorStartsOver(t *testing.T) {
	c, _ := newFloor(Options{MaxBytes: 1})
	f := c.(*floor)
	big := make([]byte, f.shardCap/3)
	k := func(i int) []byte { return fmt.Appendf(nil, "k%d", i) }
	// Keys of one shard, until one Set finds it full.
	var same [][]byte
	s0, _ := f.shard(k(0))
	for i := 0; len(same) < 4; i++ {
		if s, _ := f.shard(k(i)); s == s0 {
			same = append(same, k(i))
		}
	}
	for _, key := range same {
		c.Set(key, big)
	}
	if _, ok := c.Get(nil, same[0]); ok {
		t.Error("the first entry survived a Set into a full shard")
	}
	if v, ok := c.Get(nil, same[3]); !ok || len(v) != len(big) {
		t.Errorf("the last entry: %d bytes, %v", len(v), ok)
	}
}
