package cache

// Snapshots: SaveTo writes the cache's entries as a stream, LoadFrom reads
// one back. The format, all integers little-endian:
//
//	header   8 bytes "OHCACHE\x00", uint32 version (1), uint32 0
//	records  uint32 key length, uint32 value length, int64 expiry (Unix
//	         nanoseconds, 0 for none), the key, the value
//	trailer  uint32 0xFFFFFFFF, uint64 the number of records, uint32 the
//	         CRC-32C of every record's bytes
//
// SaveTo writes each shard's entries under its lock, straight from the heap
// into a bufio.Writer; LoadFrom reads one record at a time into a buffer it
// reuses, so a load takes memory for the largest entry, not the snapshot.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"
)

const (
	snapshotMagic   = "OHCACHE\x00"
	snapshotVersion = 1
	snapshotEnd     = 0xFFFFFFFF
	recordHeader    = 16
)

// ErrSnapshot is wrapped by the errors LoadFrom returns for a stream that
// is not a snapshot, is of another version, is cut short or fails its
// checksum.
var ErrSnapshot = errors.New("offheap/cache: bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SaveTo writes the cache's entries to w (the format is in snapshot.go),
// skipping expired ones. Each shard is written as it is at one moment, under
// its lock; calls on other shards proceed meanwhile. It returns w's error,
// or ErrClosed.
func (c *Cache) SaveTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var hdr [16]byte
	copy(hdr[:], snapshotMagic)
	binary.LittleEndian.PutUint32(hdr[8:], snapshotVersion)
	if _, err := bw.Write(hdr[:]); err != nil {
		return err
	}
	var crc crcWriter
	var count uint64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		n, err := c.saveShard(s, bw, &crc)
		s.mu.Unlock()
		count += n
		if err != nil {
			return err
		}
	}
	var tr [16]byte
	binary.LittleEndian.PutUint32(tr[:], snapshotEnd)
	binary.LittleEndian.PutUint64(tr[4:], count)
	binary.LittleEndian.PutUint32(tr[12:], crc.sum)
	if _, err := bw.Write(tr[:]); err != nil {
		return err
	}
	return bw.Flush()
}

// saveShard writes s's live entries; s is locked.
func (c *Cache) saveShard(s *shard, bw *bufio.Writer, crc *crcWriter) (n uint64, err error) {
	now, wall := c.now(), time.Now().UnixNano()
	var rh [recordHeader]byte
	for _, v := range s.index.slots {
		if !slotLive(v) {
			continue
		}
		e := slotEntry(v)
		var exp int64
		if x := e.expiry(); x != 0 {
			if x <= now {
				continue
			}
			exp = wall + (x - now)
		}
		binary.LittleEndian.PutUint32(rh[:], uint32(e.keyLen()))
		binary.LittleEndian.PutUint32(rh[4:], uint32(e.valueLen()))
		binary.LittleEndian.PutUint64(rh[8:], uint64(exp))
		kv := e.block()[headerSize:]
		crc.Write(rh[:])
		crc.Write(kv)
		bw.Write(rh[:])
		if _, err := bw.Write(kv); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// LoadFrom reads a snapshot SaveTo wrote and stores its entries, as Set
// would (so a cache smaller than the one saved evicts as it loads). Entries
// whose expiry has passed are skipped; one too large for this cache
// (MaxEntryBytes) is skipped too. A stream that is not a snapshot, is cut
// short or fails its checksum gets an error wrapping ErrSnapshot, and the
// cache is then emptied (Reset), since its entries cannot be trusted.
func (c *Cache) LoadFrom(r io.Reader) error {
	err := c.load(bufio.NewReaderSize(r, 1<<20))
	if err != nil && !errors.Is(err, ErrClosed) {
		c.Reset()
	}
	return err
}

func (c *Cache) load(br *bufio.Reader) error {
	var hdr [16]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return fmt.Errorf("%w: reading the header: %v", ErrSnapshot, err)
	}
	if string(hdr[:8]) != snapshotMagic {
		return fmt.Errorf("%w: no snapshot magic", ErrSnapshot)
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != snapshotVersion {
		return fmt.Errorf("%w: version %d, this package reads version %d", ErrSnapshot, v, snapshotVersion)
	}
	var crc crcWriter
	var buf []byte
	var rh [recordHeader]byte
	var count uint64
	wall := time.Now().UnixNano()
	for {
		if _, err := io.ReadFull(br, rh[:4]); err != nil {
			return fmt.Errorf("%w: cut short after %d records: %v", ErrSnapshot, count, err)
		}
		kl := binary.LittleEndian.Uint32(rh[:])
		if kl == snapshotEnd {
			break
		}
		if _, err := io.ReadFull(br, rh[4:]); err != nil {
			return fmt.Errorf("%w: cut short after %d records: %v", ErrSnapshot, count, err)
		}
		vl := binary.LittleEndian.Uint32(rh[4:])
		exp := int64(binary.LittleEndian.Uint64(rh[8:]))
		crc.Write(rh[:])
		n := int64(kl) + int64(vl)
		if kl > maxKeyLen || c.classSize(entrySize(int(kl), int(vl))) > c.maxEntry {
			if _, err := io.CopyN(&crc, br, n); err != nil {
				return fmt.Errorf("%w: cut short in record %d: %v", ErrSnapshot, count, err)
			}
			count++
			continue
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("%w: cut short in record %d: %v", ErrSnapshot, count, err)
		}
		crc.Write(buf)
		count++
		var ttl time.Duration
		if exp != 0 {
			if ttl = time.Duration(exp - wall); ttl <= 0 {
				continue
			}
		}
		if err := c.set(buf[:kl], buf[kl:], ttl); errors.Is(err, ErrClosed) {
			return err
		}
	}
	var tr [12]byte
	if _, err := io.ReadFull(br, tr[:]); err != nil {
		return fmt.Errorf("%w: cut short in the trailer: %v", ErrSnapshot, err)
	}
	if n := binary.LittleEndian.Uint64(tr[:]); n != count {
		return fmt.Errorf("%w: %d records read, the trailer says %d", ErrSnapshot, count, n)
	}
	if sum := binary.LittleEndian.Uint32(tr[8:]); sum != crc.sum {
		return fmt.Errorf("%w: checksum mismatch", ErrSnapshot)
	}
	return nil
}

// crcWriter keeps the CRC-32C of what is written to it.
type crcWriter struct{ sum uint32 }

func (w *crcWriter) Write(b []byte) (int, error) {
	w.sum = crc32.Update(w.sum, castagnoli, b)
	return len(b), nil
}

// SaveToFile writes a snapshot (SaveTo) to a temporary file beside path,
// then renames it to path, so that path holds a whole snapshot or what it
// held before.
func (c *Cache) SaveToFile(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if err := c.SaveTo(f); err != nil {
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

// LoadFromFile loads the snapshot at path (LoadFrom).
func (c *Cache) LoadFromFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return c.LoadFrom(f)
}
