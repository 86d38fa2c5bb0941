package offheap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"unicode/utf8"
	"unsafe"
)

// bufferHeaps are the heaps FuzzBuffer runs on, made once per process: a
// fast heap, and a checked one, whose canaries and poison catch a Buffer
// that writes past its block's length or touches a block it gave back.
var bufferHeaps = sync.OnceValues(func() (*Heap, *Heap) {
	fast, err := NewHeap(Options{})
	if err != nil {
		panic(err)
	}
	checked, err := NewHeap(Options{Checked: true})
	if err != nil {
		panic(err)
	}
	return fast, checked
})

// FuzzBuffer runs a sequence of operations, decoded from the input, on a
// Buffer and on a bytes.Buffer, and compares them after each: the unread
// bytes, Len, every result and error. Detach is compared with the model's
// unread bytes (and the model emptied); Free empties the model. At the end
// everything the Buffer took is given back: the heap's live blocks are what
// they were.
func FuzzBuffer(f *testing.F) {
	f.Add([]byte{0, 5, 1, 200, 3, 0, 4, 7, 9, 2, 10, 4, 11, 12, 6, 3})
	f.Add([]byte{1, 1, 0, 255, 0, 255, 0, 255, 5, 100, 8, 0, 9, 50, 13, 0, 0, 10, 12})
	f.Add([]byte{128, 14, 200, 0, 40, 7, 3, 6, 0, 0, 9, 255, 2, 0xe2, 15, 9})
	f.Add(bytes.Repeat([]byte{0, 250, 6, 100}, 40))
	f.Fuzz(func(t *testing.T, ops []byte) {
		fast, checked := bufferHeaps()
		h := fast
		if len(ops) > 0 && ops[0]&0x80 != 0 {
			h = checked
		}
		before := h.Stats().LiveBlocks
		runBufferOps(t, h, ops)
		if after := h.Stats().LiveBlocks; after != before {
			t.Fatalf("%d live blocks after the Buffer was freed, %d before", after, before)
		}
	})
}

// runBufferOps is FuzzBuffer's body: ops decoded two bytes at a time, an
// operation and its argument.
func runBufferOps(t *testing.T, h *Heap, ops []byte) {
	var size int
	if len(ops) > 0 {
		size = int(ops[0]&0x7f) * 3
	}
	b := h.NewBuffer(size)
	defer b.Free()
	var model bytes.Buffer
	var kept [][]byte // Detach results, freed at the end
	defer func() {
		for _, v := range kept {
			h.Free(v)
		}
	}()
	data := func(n byte) []byte { // bytes that differ from one call to the next
		p := make([]byte, int(n)*7%601)
		for i := range p {
			p[i] = byte(i) + n
		}
		return p
	}
	for i := 1; i+1 < len(ops); i += 2 {
		op, arg := ops[i]%19, ops[i+1]
		var got, want string
		switch op {
		case 0:
			n, err := b.Write(data(arg))
			m, merr := model.Write(data(arg))
			got, want = fmt.Sprint(n, err), fmt.Sprint(m, merr)
		case 1:
			n, err := b.WriteString(string(data(arg)))
			m, merr := model.WriteString(string(data(arg)))
			got, want = fmt.Sprint(n, err), fmt.Sprint(m, merr)
		case 2:
			got, want = fmt.Sprint(b.WriteByte(arg)), fmt.Sprint(model.WriteByte(arg))
		case 3:
			r := rune(arg) * 397 // ASCII, 2-, 3-byte runes, surrogates (invalid)
			if arg == 255 {
				r = -1
			}
			n, err := b.WriteRune(r)
			m, merr := model.WriteRune(r)
			got, want = fmt.Sprint(n, err), fmt.Sprint(m, merr)
		case 4:
			p, q := make([]byte, arg), make([]byte, arg)
			n, err := b.Read(p)
			m, merr := model.Read(q)
			got, want = fmt.Sprint(n, err, p[:n]), fmt.Sprint(m, merr, q[:m])
		case 5:
			c, err := b.ReadByte()
			mc, merr := model.ReadByte()
			got, want = fmt.Sprint(c, err), fmt.Sprint(mc, merr)
		case 6:
			n := int(arg) % (b.Len() + 1)
			b.Truncate(n)
			model.Truncate(n)
		case 7:
			b.Reset()
			model.Reset()
		case 8:
			b.Grow(int(arg) * 13)
			if b.Cap()-b.Len() < int(arg)*13 {
				t.Fatalf("Grow(%d): %d free bytes", int(arg)*13, b.Cap()-b.Len())
			}
		case 9:
			// Reads of odd sizes, with the data and EOF together at the end.
			src := iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(data(arg))))
			n, err := b.ReadFrom(src)
			m, merr := model.ReadFrom(iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(data(arg)))))
			got, want = fmt.Sprint(n, err), fmt.Sprint(m, merr)
		case 10:
			var w, mw bytes.Buffer
			n, err := b.WriteTo(&w)
			m, merr := model.WriteTo(&mw)
			got, want = fmt.Sprint(n, err, w.Bytes()), fmt.Sprint(m, merr, mw.Bytes())
		case 11:
			// A writer that takes arg%5 bytes and then fails.
			lim := int(arg) % 5
			sw, msw := &shortWriter{max: lim}, &shortWriter{max: lim}
			n, err := b.WriteTo(sw)
			m, merr := model.WriteTo(msw)
			got, want = fmt.Sprint(n, err, sw.got), fmt.Sprint(m, merr, msw.got)
		case 12:
			v := b.Detach()
			if len(v) != cap(v) {
				t.Fatalf("Detach: len %d cap %d", len(v), cap(v))
			}
			got, want = string(v), model.String()
			model.Reset()
			if len(v) > 0 {
				h.Ref(v) // a block of its own, or a prefix of one
				kept = append(kept, v)
			}
		case 13:
			b.Free()
			model.Reset()
		case 14:
			n, err := fmt.Fprintf(b, "%d:%s;", arg, data(arg/8))
			m, merr := fmt.Fprintf(&model, "%d:%s;", arg, data(arg/8))
			got, want = fmt.Sprint(n, err), fmt.Sprint(m, merr)
		case 15:
			got, want = b.String(), model.String()
		case 16:
			got, want = fmt.Sprint(io.Copy(io.Discard, b)), fmt.Sprint(io.Copy(io.Discard, &model))
		case 17:
			n, err := b.Write(b.Bytes()[:int(arg)%(b.Len()+1)])
			m, merr := model.Write(model.Bytes()[:int(arg)%(model.Len()+1)])
			got, want = fmt.Sprint(n, err), fmt.Sprint(m, merr)
		case 18:
			// At most 600 of its own bytes, so that a run of these does not
			// double the buffer each time.
			i := int(arg) % (b.Len() + 1)
			j := min(b.Len(), i+600)
			n, err := b.ReadFrom(bytes.NewReader(b.Bytes()[i:j]))
			m, merr := model.ReadFrom(bytes.NewReader(model.Bytes()[i:j]))
			got, want = fmt.Sprint(n, err), fmt.Sprint(m, merr)
		}
		if got != want {
			t.Fatalf("op %d (%d, %d): got %q, want %q", i/2, op, arg, got, want)
		}
		if !bytes.Equal(b.Bytes(), model.Bytes()) || b.Len() != model.Len() {
			t.Fatalf("op %d (%d, %d): %d unread bytes %q, want %d %q", i/2, op, arg, b.Len(), b.Bytes(), model.Len(), model.Bytes())
		}
		if b.Cap() < b.Len() || cap(b.Bytes()) != b.Len() {
			t.Fatalf("op %d: Cap %d, Len %d, cap(Bytes()) %d", i/2, b.Cap(), b.Len(), cap(b.Bytes()))
		}
	}
}

// shortWriter takes at most max bytes per Write and then fails.
type shortWriter struct {
	max int
	got []byte
}

var errShortWriter = errors.New("shortWriter: full")

func (w *shortWriter) Write(p []byte) (int, error) {
	n := min(len(p), w.max)
	w.got = append(w.got, p[:n]...)
	if n < len(p) {
		if n == 1 {
			return n, nil // a short write without an error: io.ErrShortWrite
		}
		return n, errShortWriter
	}
	return n, nil
}

// TestBufferWriteNoAlloc: in steady state, writing to a Buffer makes no Go
// allocation, neither within its block nor when it moves to a larger one,
// and neither do Detach, Reset and Free.
func TestBufferWriteNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	h := newTestHeap(t, Options{})
	b := h.NewBuffer(64)
	p := make([]byte, 100)
	if n := testing.AllocsPerRun(1000, func() {
		b.Reset()
		b.Write(p[:40])
		b.WriteString("key=")
		b.WriteByte('x')
		b.WriteRune('é')
	}); n != 0 {
		t.Errorf("writes within the block: %v Go allocations per run", n)
	}
	if n := testing.AllocsPerRun(200, func() {
		for range 50 { // from 64 bytes to 5000: the buffer moves several times
			b.Write(p)
		}
		h.Free(b.Detach())
		b.Free()
	}); n != 0 {
		t.Errorf("writes that grow the block, Detach, Free: %v Go allocations per run", n)
	}
	b.Free()
}

// TestBufferDetach: Detach returns a block sized for the bytes; the buffer
// keeps its block when the bytes went to a smaller one, and hands over its
// block otherwise; either way it is empty and usable.
func TestBufferDetach(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.NewBuffer(1000)
	if b.Cap() != int(chunkBytes(1000)) {
		t.Fatalf("NewBuffer(1000): Cap %d, want the whole block, %d", b.Cap(), chunkBytes(1000))
	}
	block := addrOf(b.blk)
	b.WriteString("small value")
	v := b.Detach()
	if string(v) != "small value" || addrOf(v) == block || addrOf(b.blk) != block || b.Len() != 0 {
		t.Fatalf("Detach of 11 bytes from a 1024-byte block: %q at %#x, block %#x, buffer's %#x, Len %d", v, addrOf(v), block, addrOf(b.blk), b.Len())
	}
	if got := h.Bytes(h.Ref(v)); string(got) != "small value" {
		t.Fatalf("Ref of a detached value: %q", got)
	}
	h.Free(v)
	b.Write(bytes.Repeat([]byte{'a'}, 1000))
	b.ReadByte() // Detach must slide the unread bytes to the block's start
	v = b.Detach()
	if len(v) != 999 || addrOf(v) != block || b.blk != nil || b.Cap() != 0 {
		t.Fatalf("Detach of 999 bytes from a 1024-byte block: %d bytes at %#x, want the block %#x; buffer Cap %d", len(v), addrOf(v), block, b.Cap())
	}
	h.Free(v)
	if v := b.Detach(); v == nil || len(v) != 0 {
		t.Fatalf("Detach of an empty buffer: %v", v)
	}
	b.WriteString("again") // a new block, at least NewBuffer's size
	if b.String() != "again" || b.Cap() < 1000 {
		t.Fatalf("after Detach: %q, Cap %d", b.String(), b.Cap())
	}
	b.Free()
	b.Free()
	if s := h.Stats(); s.LiveBlocks != 0 {
		t.Fatalf("%d live blocks", s.LiveBlocks)
	}
}

// TestBufferLimit: a write that needs a block the heap cannot hold returns
// the error and leaves the buffer as it was (TestBufferTryLimit: Grow and
// NewBuffer).
func TestBufferLimit(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 4 << 20})
	b := h.NewBuffer(100)
	b.WriteString("kept")
	big := make([]byte, 8<<20)
	for _, f := range []func() error{
		func() error { _, err := b.Write(big); return err },
		func() error { _, err := b.WriteString(string(big)); return err },
		func() error { _, err := b.ReadFrom(bytes.NewReader(big)); return err },
	} {
		if err := f(); !errors.Is(err, ErrLimit) {
			t.Fatalf("write past the limit: %v, want ErrLimit", err)
		}
		if b.Len() < 4 || !strings.HasPrefix(b.String(), "kept") {
			t.Fatalf("the buffer lost its bytes: %q", b.String())
		}
		b.Truncate(4)
	}
	b.WriteString("!")
	if b.String() != "kept!" {
		t.Fatalf("after the refusals: %q", b.String())
	}
	b.Free()
}

// TestBufferBadInput: the panics of bad arguments and of readers and
// writers that return impossible counts.
func TestBufferBadInput(t *testing.T) {
	h := newTestHeap(t, Options{})
	b := h.NewBuffer(0)
	defer b.Free()
	b.WriteString("abc")
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"negative", func() { h.NewBuffer(-1) }},
		{"negative count", func() { b.Grow(-1) }},
		{"out of range", func() { b.Truncate(4) }},
		{"out of range", func() { b.Truncate(-1) }},
		{"the reader returned", func() { b.ReadFrom(badCount{-1}) }},
		{"the reader returned", func() { b.ReadFrom(badCount{1 << 30}) }},
		{"the writer returned", func() { b.WriteTo(badCount{4}) }},
	} {
		if msg := mustPanic(t, c.f); !strings.Contains(msg, c.want) {
			t.Errorf("panic %q, want it to contain %q", msg, c.want)
		}
	}
	if b.String() != "abc" {
		t.Fatalf("after the refusals: %q", b.String())
	}
}

// badCount is a reader and writer that return count n.
type badCount struct{ n int }

func (r badCount) Read([]byte) (int, error)  { return r.n, nil }
func (r badCount) Write([]byte) (int, error) { return r.n, nil }

// TestBufferChecked: a Buffer on a checked heap writes only within the
// length it allocated (the canaries are intact at Free) and leaves no leak.
func TestBufferChecked(t *testing.T) {
	h := checkedHeap(t, Options{})
	b := h.NewBuffer(10)
	for i := range 5000 {
		b.WriteRune(rune(i))
		if i%700 == 0 {
			h.Free(b.Detach())
		}
	}
	if !utf8.Valid(b.Bytes()) {
		t.Fatal("invalid UTF-8")
	}
	b.Free()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBufferWritesItself: a full Buffer given its own bytes to append
// (Write, WriteString, ReadFrom, WriteTo, io.Copy of itself) doubles them,
// as bytes.Buffer does, at every size from 16 B to 2 MiB and in every mode:
// the block it leaves is freed only after the copy, so the appended half
// holds neither the double-free key nor poison.
func TestBufferWritesItself(t *testing.T) {
	appends := []struct {
		name string
		f    func(b *Buffer) error
	}{
		{"Write", func(b *Buffer) error { _, err := b.Write(b.Bytes()); return err }},
		{"WriteString", func(b *Buffer) error {
			p := b.Bytes()
			_, err := b.WriteString(unsafe.String(unsafe.SliceData(p), len(p)))
			return err
		}},
		{"ReadFrom", func(b *Buffer) error { _, err := b.ReadFrom(bytes.NewReader(b.Bytes())); return err }},
		{"ReadFrom/half", func(b *Buffer) error {
			_, err := b.ReadFrom(iotest.HalfReader(bytes.NewReader(b.Bytes())))
			return err
		}},
		{"WriteTo", func(b *Buffer) error { _, err := b.WriteTo(b); return err }},
		{"Fprintf", func(b *Buffer) error { _, err := fmt.Fprintf(b, "%s", b.Bytes()); return err }},
	}
	pattern := make([]byte, 4<<20)
	for i := range pattern {
		pattern[i] = byte(i*7 + i>>8)
	}
	for _, mode := range []struct {
		name string
		opts Options
	}{{"fast", Options{}}, {"checked", Options{Checked: true}}, {"guarded", Options{Checked: true, GuardPages: true}}} {
		h := newTestHeap(t, mode.opts)
		for _, a := range appends {
			for size := 16; size <= 2<<20; size *= 4 {
				b := h.NewBuffer(size)
				b.Write(pattern[:b.Cap()])
				want := bytes.Repeat(b.Bytes(), 2)
				if a.name == "WriteTo" {
					want = want[:b.Len()] // WriteTo consumes what it wrote, as bytes.Buffer's
				}
				if err := a.f(b); err != nil {
					t.Fatalf("%s %s %d: %v", mode.name, a.name, size, err)
				}
				if got := b.Bytes(); !bytes.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Fatalf("%s %s of a full %d-byte Buffer: %d bytes, first difference at %d of %d", mode.name, a.name, size, len(got), i, len(want))
				}
				b.Free()
			}
		}
		if s := h.Stats(); s.LiveBlocks != 0 {
			t.Fatalf("%s: %d live blocks", mode.name, s.LiveBlocks)
		}
		if err := h.Close(); err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
	}
}

// TestBufferLimitExact: under a Limit, a Buffer that cannot have twice its
// block takes the block it needs: a write fails only when the heap cannot
// hold the unread bytes and the write together.
func TestBufferLimitExact(t *testing.T) {
	h := newTestHeap(t, Options{Limit: 16 << 20})
	b := h.NewBuffer(6 << 20)
	b.Write(make([]byte, b.Cap()))
	if _, err := b.Write(make([]byte, 1<<20)); err != nil {
		t.Fatalf("a %d-byte Buffer's Write of 1 MiB under a 16 MiB Limit: %v", b.Len(), err)
	}
	if b.Len() != 7<<20 {
		t.Fatalf("Len %d", b.Len())
	}
	b.Free()
	_, err := b.ReadFrom(io.LimitReader(zeroReader{}, 64<<20))
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("ReadFrom of 64 MiB under a 16 MiB Limit: %v", err)
	}
	if v, err := h.TryAlloc(b.Len() + minRead); err == nil {
		t.Fatalf("ReadFrom stopped at %d bytes, with room for %d more", b.Len(), len(v)-b.Len())
	}
	t.Logf("ReadFrom read %d bytes (%d MiB mapped)", b.Len(), h.Stats().MappedBytes>>20)
	b.Free()
	if s := h.Stats(); s.LiveBlocks != 0 {
		t.Fatalf("%d live blocks", s.LiveBlocks)
	}
}

// zeroReader reads zeros for ever.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestBufferStaleBytesGuarded: a read of a block the Buffer left, through a
// slice from Bytes kept past the write that moved it, is a use after free,
// which a heap with guard pages reports with the stacks of the block's
// Alloc (in the Buffer's grow) and Free. (The Buffer's own appends read no
// freed block: TestBufferWritesItself.)
func TestBufferStaleBytesGuarded(t *testing.T) {
	if raceOn {
		t.Skip("a race build has no guard pages that fault")
	}
	h := newTestHeap(t, Options{Checked: true, GuardPages: true})
	b := h.NewBuffer(64)
	b.WriteString("abc")
	stale := b.Bytes()
	b.Write(make([]byte, b.Cap())) // moves to a larger block
	var me *MemoryError
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { me = FaultError(recover()) }()
		bufferSink = stale[0]
	}()
	if me == nil || me.Kind != UseAfterFree || me.AllocStack == "" || me.FreeStack == "" {
		t.Fatalf("a read of the block a Buffer left: %v", me)
	}
	if !strings.HasPrefix(b.String(), "abc") {
		t.Fatalf("the Buffer after the fault: %q", b.String()[:8])
	}
	b.Free()
}

var bufferSink byte
