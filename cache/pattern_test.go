package cache

import (
	"encoding/binary"
	"fmt"
)

// patterned is a value for key id at version seq: 8 bytes of id and seq,
// then n bytes each id^seq, so that any mixing of two values or a read of
// freed memory shows.
func patterned(id, seq uint32, n int) []byte {
	v := make([]byte, 8+n)
	binary.LittleEndian.PutUint32(v, id)
	binary.LittleEndian.PutUint32(v[4:], seq)
	for i := 8; i < len(v); i++ {
		v[i] = byte(id ^ seq)
	}
	return v
}

func checkPatterned(id uint32, v []byte) error {
	if len(v) < 8 {
		return fmt.Errorf("value of key %d is %d bytes, under its 8-byte header", id, len(v))
	}
	if got := binary.LittleEndian.Uint32(v); got != id {
		return fmt.Errorf("key %d holds key %d's value", id, got)
	}
	seq := binary.LittleEndian.Uint32(v[4:])
	for i := 8; i < len(v); i++ {
		if v[i] != byte(id^seq) {
			return fmt.Errorf("key %d version %d: byte %d is %#x, want %#x", id, seq, i, v[i], byte(id^seq))
		}
	}
	return nil
}

// Patterned and CheckPatterned give the external tests the same values.
var Patterned, CheckPatterned = patterned, checkPatterned
