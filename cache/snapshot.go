package cache

// Snapshots: SaveTo writes the cache's entries as a stream, LoadFrom reads
// one back. The format, all integers little-endian:
//
//	header   8 bytes "OHCACHE\x00", uint32 version (3), uint32 the largest
//	         block's length, uint64 the entries when the save began (a hint)
//	blocks   uint32 the stored length in bytes, uint32 the records' length,
//	         uint32 their number, uint32 their CRC-32C, then the records,
//	         compressed where the stored length is the smaller
//	record   uint32 key length, uint32 value length, int64 expiry (Unix
//	         nanoseconds, 0 for none), the key, the value
//	trailer  uint32 0xFFFFFFFF, uint64 the number of records
//
// A block holds up to blockBytes of records, or one larger record. Version
// 2, which LoadFrom also reads, had no records' length and no compression. Both
// directions run one worker per P (at most maxWorkers): SaveTo's workers
// copy shards into blocks under each shard's lock, and the caller writes
// the blocks in shard order through a bufio.Writer; LoadFrom's caller reads
// blocks into buffers and its workers check them and Set their records.
// Either holds a few blocks per worker at a time: memory bounded by the
// largest block, not by the snapshot.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"
)

const (
	snapshotMagic   = "OHCACHE\x00"
	snapshotVersion = 3
	snapshotEnd     = 0xFFFFFFFF
	headerBytes     = 24
	blockHeader     = 16
	blockHeaderV2   = 12
	recordHeader    = 16
	blockBytes      = 1 << 20
	zSample         = 4 << 10 // the records seal tries to compress first
	maxWorkers      = 8
)

// ErrSnapshot is wrapped by the errors LoadFrom returns for a stream that
// is not a snapshot, is of another version, is cut short or fails its
// checksum.
var ErrSnapshot = errors.New("offheap: cache: bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func workers() int { return min(maxWorkers, runtime.GOMAXPROCS(0)) }

// block is a block of records being written.
type block struct {
	buf   []byte // blockHeader bytes, then the records
	zbuf  []byte // blockHeader bytes, then the records compressed
	wire  []byte // buf or zbuf: what is written
	count uint32
	end   bool // the last block of a shard
	z     *compressor
}

// SaveTo writes the cache's entries to w (the format is in snapshot.go),
// skipping expired ones. Each shard is copied as it is at one moment, under
// its lock; calls on other shards proceed meanwhile. It returns w's error,
// or ErrClosed.
func (c *Cache) SaveTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(c.snapshotHeader()); err != nil {
		return err
	}
	nw := workers()
	outs := make([]chan *block, nw)
	stop := make(chan struct{})
	pool := make(chan *block, 3*nw) // blocks the writer is done with
	var wg sync.WaitGroup
	for wi := range nw {
		outs[wi] = make(chan *block, 2)
		wg.Go(func() {
			defer close(outs[wi])
			z := new(compressor)
			emit := func(b *block) (*block, bool) {
				select {
				case outs[wi] <- b:
				case <-stop:
					return nil, false
				}
				select {
				case b := <-pool:
					return b, true
				default:
					return new(block), true
				}
			}
			b := new(block)
			for i := wi; i < len(c.shards); i += nw {
				var ok bool
				if b, ok = c.saveShard(&c.shards[i], z, b, emit); !ok {
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	var count uint64
	for i := range c.shards {
		for {
			b, ok := <-outs[i%nw]
			if !ok {
				return ErrClosed
			}
			if b.count > 0 {
				count += uint64(b.count)
				if _, err := bw.Write(b.wire); err != nil {
					return err
				}
			}
			end := b.end
			select {
			case pool <- b:
			default:
			}
			if end {
				break
			}
		}
	}
	if _, err := bw.Write(trailer(count)); err != nil {
		return err
	}
	return bw.Flush()
}

// snapshotHeader is a snapshot's header for c.
func (c *Cache) snapshotHeader() []byte {
	hdr := make([]byte, headerBytes)
	copy(hdr, snapshotMagic)
	binary.LittleEndian.PutUint32(hdr[8:], snapshotVersion)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(max(blockBytes, blockHeader+recordHeader+c.maxEntry)))
	binary.LittleEndian.PutUint64(hdr[16:], uint64(c.Len()))
	return hdr
}

// trailer is a snapshot's trailer after count records.
func trailer(count uint64) []byte {
	tr := make([]byte, 12)
	binary.LittleEndian.PutUint32(tr, snapshotEnd)
	binary.LittleEndian.PutUint64(tr[4:], count)
	return tr
}

// saveShard copies s's live entries into blocks, starting with b, sealed
// (compressed with z) and handed to emit, the last marked end; emit returns
// the block to fill next (any block: saveShard empties it), or false to
// stop. It returns the block emit returned last, and false if s is closed
// or emit stopped it.
func (c *Cache) saveShard(s *shard, z *compressor, b *block, emit func(*block) (*block, bool)) (*block, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return b, false
	}
	now, wall := c.now(), time.Now().UnixNano()
	reset := func() {
		if cap(b.buf) < blockBytes {
			b.buf = make([]byte, 0, blockBytes)
		}
		b.buf, b.count, b.end, b.z = b.buf[:blockHeader], 0, false, z
	}
	reset()
	send := func(end bool) bool {
		seal(b)
		b.end = end
		nb, ok := emit(b)
		if !ok {
			return false
		}
		b = nb
		reset()
		return true
	}
	ok := true
	s.each(func(e entry) {
		if !ok {
			return
		}
		var exp int64
		if x := e.expiry(); x != 0 {
			if x <= now {
				return
			}
			exp = expiryAfter(wall, x-now)
		}
		kl, vl := e.keyLen(), e.valueLen()
		if len(b.buf)+recordHeader+kl+vl > blockBytes && b.count > 0 && !send(false) {
			ok = false
			return
		}
		b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(kl))
		b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(vl))
		b.buf = binary.LittleEndian.AppendUint64(b.buf, uint64(exp))
		b.buf = append(b.buf, e.key()...)
		b.buf = append(b.buf, e.value()...)
		b.count++
	})
	if !ok {
		return b, false
	}
	return b, send(true)
}

// seal compresses b's records, if a sample of them (their first 4 KiB)
// compresses to half or less (compression costs more time than writing the bytes it saves where
// it saves less), and fills in the block header.
func seal(b *block) {
	recs := b.buf[blockHeader:]
	b.wire = b.buf
	sample := len(recs)
	if sample > zSample {
		sample = zSample
		if zb := b.z.compress(b.zbuf[:0], recs[:sample]); zb == nil || len(zb) > sample/2 {
			sample = 0
		}
	}
	if sample > 0 {
		if zb := b.z.compress(append(b.zbuf[:0], make([]byte, blockHeader)...), recs); zb != nil {
			b.zbuf, b.wire = zb, zb
		}
	}
	binary.LittleEndian.PutUint32(b.wire, uint32(len(b.wire)-blockHeader))
	binary.LittleEndian.PutUint32(b.wire[4:], uint32(len(recs)))
	binary.LittleEndian.PutUint32(b.wire[8:], b.count)
	binary.LittleEndian.PutUint32(b.wire[12:], crc32.Checksum(recs, castagnoli))
}

// LoadFrom reads a snapshot SaveTo wrote and stores its entries, as Set
// would (so a cache smaller than the one saved evicts as it loads). Entries
// whose expiry has passed are skipped; one too large for this cache
// (MaxEntryBytes) is skipped too. A stream that is not a snapshot, is cut
// short or fails its checksum gets an error wrapping ErrSnapshot. The
// cache is then emptied (Reset) if the load had begun storing entries,
// since they cannot be trusted, and is left as it was if not (a bad
// header).
func (c *Cache) LoadFrom(r io.Reader) error {
	// A buffer smaller than a block: a block's bytes are mostly read
	// straight into it, not copied through the buffer.
	stored, err := c.load(bufio.NewReaderSize(r, 64<<10))
	if err != nil && stored && !errors.Is(err, ErrClosed) {
		c.Reset()
	}
	return err
}

// load loads a snapshot from br; stored says whether it began storing
// entries.
func (c *Cache) load(br *bufio.Reader) (stored bool, err error) {
	var hdr [headerBytes]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return false, fmt.Errorf("%w: reading the header: %v", ErrSnapshot, err)
	}
	bh, maxBlock, err := c.startLoad(hdr[:])
	if err != nil {
		return false, err
	}
	nw := workers()
	free := make(chan []byte, nw+1)
	for range nw + 1 {
		free <- nil
	}
	work := make(chan []byte)
	lw := c.newLoadWorkers(nw)
	var wg sync.WaitGroup
	for wi := range nw {
		wg.Go(func() {
			for buf := range work {
				lw.block(wi, buf, bh, maxBlock)
				free <- buf
			}
		})
	}
	err = readBlocks(br, bh, maxBlock, free, work)
	close(work)
	wg.Wait()
	if err != nil {
		return true, err
	}
	var tr [8]byte
	if _, err := io.ReadFull(br, tr[:]); err != nil {
		return true, fmt.Errorf("%w: cut short in the trailer: %v", ErrSnapshot, err)
	}
	return true, lw.finish(binary.LittleEndian.Uint64(tr[:]))
}

// startLoad checks a snapshot's header, presizes the cache for it and
// returns its block header's length and its largest block's.
func (c *Cache) startLoad(hdr []byte) (bh int, maxBlock uint32, err error) {
	if string(hdr[:8]) != snapshotMagic {
		return 0, 0, fmt.Errorf("%w: no snapshot magic", ErrSnapshot)
	}
	version := binary.LittleEndian.Uint32(hdr[8:])
	if version != snapshotVersion && version != 2 {
		return 0, 0, fmt.Errorf("%w: version %d, this package reads versions 2 and %d", ErrSnapshot, version, snapshotVersion)
	}
	bh = blockHeader
	if version == 2 {
		bh = blockHeaderV2
	}
	maxBlock = binary.LittleEndian.Uint32(hdr[12:])
	if maxBlock > 1<<31 {
		return 0, 0, fmt.Errorf("%w: blocks of up to %d bytes", ErrSnapshot, maxBlock)
	}
	c.presize(binary.LittleEndian.Uint64(hdr[16:]))
	return bh, maxBlock, nil
}

// loadWorkers is the state of a load's workers: each its scratch memory,
// its first error and the records it counted.
type loadWorkers struct {
	c      *Cache
	sc     []loadScratch
	errs   []error
	counts []uint64
}

func (c *Cache) newLoadWorkers(nw int) *loadWorkers {
	lw := &loadWorkers{c: c, sc: make([]loadScratch, nw), errs: make([]error, nw), counts: make([]uint64, nw)}
	for wi := range lw.sc {
		lw.sc[wi].first = wi * len(c.shards) / nw
	}
	return lw
}

// block loads block buf as worker wi, unless the worker has failed.
func (lw *loadWorkers) block(wi int, buf []byte, bh int, maxBlock uint32) {
	if lw.errs[wi] == nil {
		n, err := lw.c.loadBlock(buf, bh, int(maxBlock), &lw.sc[wi])
		lw.errs[wi] = err
		lw.counts[wi] += n
	}
}

// finish returns the workers' errors, or an error if they loaded other
// than the trailer's count of records.
func (lw *loadWorkers) finish(want uint64) error {
	if err := errors.Join(lw.errs...); err != nil {
		return err
	}
	var count uint64
	for _, n := range lw.counts {
		count += n
	}
	if want != count {
		return fmt.Errorf("%w: %d records read, the trailer says %d", ErrSnapshot, count, want)
	}
	return nil
}

// readBlocks reads blocks (header and records) into buffers from free and
// sends them to work, up to the trailer's mark.
func readBlocks(br *bufio.Reader, bh int, maxBlock uint32, free chan []byte, work chan<- []byte) error {
	for n := 0; ; n++ {
		var first [4]byte
		if _, err := io.ReadFull(br, first[:]); err != nil {
			return fmt.Errorf("%w: cut short after %d blocks: %v", ErrSnapshot, n, err)
		}
		size := binary.LittleEndian.Uint32(first[:])
		if size == snapshotEnd {
			return nil
		}
		if size > maxBlock {
			return fmt.Errorf("%w: block %d of %d bytes, over the header's %d", ErrSnapshot, n, size, maxBlock)
		}
		buf, err := readBlock(br, <-free, first, bh+int(size))
		if err != nil {
			return fmt.Errorf("%w: cut short in block %d: %v", ErrSnapshot, n, err)
		}
		work <- buf
	}
}

// readBlock reads a block of n bytes, the first 4 of which are first, into
// buf (grown as needed). Past blockBytes it grows buf by doubling as the
// bytes arrive, so that a stream that claims a block of up to 2 GiB and
// ends costs what it held, not what it claimed.
func readBlock(br *bufio.Reader, buf []byte, first [4]byte, n int) ([]byte, error) {
	buf = append(buf[:0], first[:]...)
	for have := len(buf); have < n; have = len(buf) {
		next := min(n, max(2*have, blockBytes+blockHeader))
		buf = slices.Grow(buf, next-have)[:next]
		if _, err := io.ReadFull(br, buf[have:]); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// loadBlock decompresses a block (of a header of bh bytes) into sc.raw if
// it is compressed, checks its checksum and Sets its records, returning how
// many it held.
func (c *Cache) loadBlock(buf []byte, bh, maxBlock int, sc *loadScratch) (uint64, error) {
	recs := buf[bh:]
	count := binary.LittleEndian.Uint32(buf[bh-8:])
	sum := binary.LittleEndian.Uint32(buf[bh-4:])
	if bh == blockHeader {
		switch rawLen := int(binary.LittleEndian.Uint32(buf[4:])); {
		case rawLen > maxBlock || rawLen < len(recs):
			return 0, fmt.Errorf("%w: a block of %d bytes stored in %d", ErrSnapshot, rawLen, len(recs))
		case rawLen > len(recs):
			if cap(sc.raw) < rawLen {
				sc.raw = make([]byte, 0, rawLen) // at once, not by appends that copy what they have
			}
			out, err := decompress(sc.raw[:0], recs, rawLen)
			if err != nil || len(out) != rawLen {
				return 0, fmt.Errorf("%w: %v", ErrSnapshot, errCorrupt)
			}
			sc.raw, recs = out, out
		}
	}
	return c.loadRecords(recs, count, sum, sc)
}

// presize grows each shard's index for its share of n entries, as far as
// its budget allows, so that a load does not rebuild the tables as it goes.
func (c *Cache) presize(n uint64) {
	per := int(n/uint64(len(c.shards))) + 1
	for i := range c.shards {
		s := &c.shards[i]
		s.lock()
		if !s.closed && s.index.tableLen(per) > len(s.index.slots) && int64(s.index.tableLen(per))*8 < c.budget.Load()/4 {
			_ = c.rebuildIndex(s, per) // on failure the table grows as the load goes
		}
		s.unlock()
	}
}
