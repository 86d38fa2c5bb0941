package cache

// Snapshots to files. SaveToFile writes the same format as SaveTo, but its
// workers write their blocks themselves, each at an offset it reserves
// (an atomic add) once its block is sealed: so the file's blocks are in the
// order they were sealed, not shard by shard, which the format allows (a
// block is whole in itself), and the writes run in parallel with no copy
// through a single writer.

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// SaveToFile writes a snapshot (SaveTo's format) to a temporary file beside
// path, then renames it to path, so that path holds a whole snapshot or what
// it held before.
func (c *Cache) SaveToFile(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if err := c.saveFile(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// saveFile writes a snapshot to f, its workers writing their own blocks.
func (c *Cache) saveFile(f *os.File) error {
	hdr := c.snapshotHeader()
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return err
	}
	var (
		off     atomic.Int64
		count   atomic.Uint64
		errOnce sync.Once
		failed  atomic.Bool
		werr    error
	)
	off.Store(int64(len(hdr)))
	nw := workers()
	var wg sync.WaitGroup
	for wi := range nw {
		wg.Go(func() {
			z := new(compressor)
			emit := func(b *block) (*block, bool) {
				if failed.Load() {
					return nil, false
				}
				if b.count > 0 {
					n := int64(len(b.wire))
					if _, err := f.WriteAt(b.wire, off.Add(n)-n); err != nil {
						errOnce.Do(func() { werr = err })
						failed.Store(true)
						return nil, false
					}
					count.Add(uint64(b.count))
				}
				return b, true
			}
			b := new(block)
			for i := wi; i < len(c.shards); i += nw {
				var ok bool
				if b, ok = c.saveShard(&c.shards[i], z, b, emit); !ok {
					if !failed.Load() {
						errOnce.Do(func() { werr = ErrClosed })
						failed.Store(true)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return werr
	}
	_, err := f.WriteAt(trailer(count.Load()), off.Load())
	return err
}

// LoadFromFile loads the snapshot at path (LoadFrom).
func (c *Cache) LoadFromFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return c.LoadFrom(f)
}
