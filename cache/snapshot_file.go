package cache

// Snapshots to files. SaveToFile writes the same format as SaveTo, but its
// workers write their blocks themselves, each at an offset it reserves
// (an atomic add) once its block is sealed: so the file's blocks are in the
// order they were sealed, not shard by shard, which the format allows (a
// block is whole in itself), and the writes run in parallel with no copy
// through a single writer. LoadFromFile maps the file, where the system
// allows, and its workers load the blocks from the mapping: no read into
// buffers, and the whole file's framing is checked before any entry is
// stored.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
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

// LoadFromFile loads the snapshot at path, as LoadFrom does. Where the
// file can be mapped, its blocks are loaded from the mapping, with no copy
// through buffers, and a file cut short is refused before any entry is
// loaded, leaving the cache as it was; a file changed while it is loaded
// gets an error wrapping ErrSnapshot, not a fault.
func (c *Cache) LoadFromFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, unmap := mapFile(f)
	if data == nil {
		return c.LoadFrom(f)
	}
	defer unmap()
	stored, err := c.loadMapped(data)
	if err != nil && stored && !errors.Is(err, ErrClosed) {
		c.Reset()
	}
	return err
}

// loadMapped loads the snapshot in data, a mapped file: it finds the
// blocks first, then its workers take them in turn; stored says whether
// they began storing entries. A fault reading the mapping (the file cut
// short under it) is returned as an error.
func (c *Cache) loadMapped(data []byte) (stored bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the file changed as it was read: %v", ErrSnapshot, r)
		}
	}()
	if len(data) < headerBytes {
		return false, fmt.Errorf("%w: reading the header: %v", ErrSnapshot, io.ErrUnexpectedEOF)
	}
	bh, maxBlock, err := c.startLoad(data[:headerBytes])
	if err != nil {
		return false, err
	}
	var blocks [][]byte
	off := headerBytes
	for {
		if len(data)-off < 4 {
			return false, fmt.Errorf("%w: cut short after %d blocks", ErrSnapshot, len(blocks))
		}
		size := binary.LittleEndian.Uint32(data[off:])
		if size == snapshotEnd {
			off += 4
			break
		}
		if size > maxBlock {
			return false, fmt.Errorf("%w: block %d of %d bytes, over the header's %d", ErrSnapshot, len(blocks), size, maxBlock)
		}
		end := off + bh + int(size)
		if end > len(data) {
			return false, fmt.Errorf("%w: cut short in block %d", ErrSnapshot, len(blocks))
		}
		blocks = append(blocks, data[off:end:end])
		off = end
	}
	if len(data)-off < 8 {
		return false, fmt.Errorf("%w: cut short in the trailer", ErrSnapshot)
	}
	want := binary.LittleEndian.Uint64(data[off:])
	stored = true
	nw := min(workers(), len(blocks))
	lw := c.newLoadWorkers(max(nw, 1))
	var next atomic.Int64
	var wg sync.WaitGroup
	for wi := range nw {
		wg.Go(func() {
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() {
				if r := recover(); r != nil {
					lw.errs[wi] = fmt.Errorf("%w: the file changed as it was read: %v", ErrSnapshot, r)
				}
			}()
			for i := next.Add(1) - 1; i < int64(len(blocks)); i = next.Add(1) - 1 {
				lw.block(wi, blocks[i], bh, maxBlock)
			}
		})
	}
	wg.Wait()
	return true, lw.finish(want)
}
