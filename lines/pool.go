package lines

import "sync"

// maxPooled bounds the buffers kept in the pool, so that one huge call does
// not pin a huge buffer for the life of the program.
const maxPooled = 64 << 10

// bufPool holds the goroutine-owned buffers that calls format into before
// taking the lock. Pointers to slices avoid an allocation per Put.
var bufPool = sync.Pool{
	New: func() any {
		b := make([]byte, 0, 256)
		return &b
	},
}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(bp *[]byte) {
	if cap(*bp) > maxPooled {
		return
	}
	*bp = (*bp)[:0]
	bufPool.Put(bp)
}
