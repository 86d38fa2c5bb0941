package cache

import (
	"bytes"
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
