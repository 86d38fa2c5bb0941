package cache

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestCompressRoundTrip compresses repetitive, random and mixed blocks and
// checks that each decompresses to itself, and that a cut or altered
// compressed block is refused or decompresses to other bytes, never
// past its stated length.
func TestCompressRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	pattern := bytes.Repeat([]byte("offheap cache snapshot "), 3000)
	mixed := append(append([]byte{}, random[:5000]...), pattern[:20000]...)
	var z compressor
	stored := 0
	for name, src := range map[string][]byte{"random": random, "pattern": pattern, "mixed": mixed, "runs": make([]byte, 9000)} {
		zb := z.compress(nil, src)
		if zb == nil {
			stored++
			continue
		}
		out, err := decompress(nil, zb, len(src))
		if err != nil || !bytes.Equal(out, src) {
			t.Fatalf("%s: round trip failed (%v)", name, err)
		}
		if _, err := decompress(nil, zb, len(src)-1); err == nil {
			t.Fatalf("%s: decompressed past a length one short", name)
		}
		for cut := 1; cut < len(zb); cut += len(zb)/7 + 1 {
			if out, err := decompress(nil, zb[:cut], len(src)); err == nil && bytes.Equal(out, src) {
				t.Fatalf("%s: a block cut to %d bytes decompressed whole", name, cut)
			}
		}
	}
	if stored != 1 {
		t.Fatalf("%d blocks stored uncompressed, want 1 (the random one)", stored)
	}
}

// TestAppendMatch holds appendMatch to the byte-at-a-time copy it stands
// for, out[i] = out[i-off], for matches shorter, as long and longer than
// their offset.
func TestAppendMatch(t *testing.T) {
	prefix := []byte("abcdefghijklmnopqrstuvwxyz0123456789")
	for off := 1; off <= len(prefix); off++ {
		for _, m := range []int{1, off - 1, off, off + 1, 2*off + 3, 1000} {
			if m < 1 {
				continue
			}
			want := append([]byte{}, prefix...)
			for range m {
				want = append(want, want[len(want)-off])
			}
			got := appendMatch(append([]byte{}, prefix...), off, m)
			if !bytes.Equal(got, want) {
				t.Fatalf("off %d, m %d: %q, want %q", off, m, got[len(prefix):], want[len(prefix):])
			}
		}
	}
}

// BenchmarkDecompressRun: a block of a few bytes that expands to a 64 MiB
// run of one byte, as a damaged or hostile snapshot may hold: appendMatch
// copies it in 26 appends, where one append per offset's worth of bytes
// took 64M.
func BenchmarkDecompressRun(b *testing.B) {
	const n = 64 << 20
	var z []byte
	z = binary.AppendUvarint(z, 1)
	z = append(z, 'x')
	z = binary.AppendUvarint(z, n-1)
	z = binary.AppendUvarint(z, 1)
	z = append(z, 0, 0) // no literals, and the end
	dst := make([]byte, 0, n)
	for b.Loop() {
		out, err := decompress(dst[:0], z, n)
		if err != nil || len(out) != n {
			b.Fatal(err, len(out))
		}
	}
}
