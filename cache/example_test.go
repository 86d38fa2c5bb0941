package cache_test

import (
	"fmt"

	"github.com/offheap/offheap/cache"
)

func Example() {
	c, err := cache.New(cache.Options{MaxBytes: 64 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	c.Set([]byte("user:1"), []byte("Ada"))
	c.Set([]byte("user:2"), []byte("Grace"))

	// Get appends the value to dst: reuse one buffer across calls.
	buf := make([]byte, 0, 64)
	buf, ok := c.Get(buf[:0], []byte("user:1"))
	fmt.Println(string(buf), ok)

	// View reads the value in place; the bytes are valid only inside f.
	c.View([]byte("user:2"), func(v []byte) { fmt.Println(len(v), string(v)) })

	c.Delete([]byte("user:1"))
	_, ok = c.Get(nil, []byte("user:1"))
	fmt.Println(ok, c.Len())
	// Output:
	// Ada true
	// 5 Grace
	// false 1
}
