package offheap_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/offheap/offheap"
)

// A Buffer builds values off the Go heap; Detach hands each one over in a
// block of its own, and the Buffer keeps its block for the next.
func ExampleBuffer() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(256)
	defer buf.Free()
	index := map[int]offheap.Ref{}
	for id := range 3 {
		fmt.Fprintf(buf, "user %d: [%s]", id, strings.Repeat("*", id))
		index[id] = h.Ref(buf.Detach())
	}
	for id := range 3 {
		fmt.Printf("%s\n", h.Bytes(index[id]))
		h.FreeRef(index[id])
	}
	// Output:
	// user 0: []
	// user 1: [*]
	// user 2: [**]
}

// NewBuffer's size is a floor: the Buffer's capacity is its whole block.
func ExampleHeap_NewBuffer() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(100)
	fmt.Println(buf.Len(), buf.Cap()) // 100 bytes take a 112-byte block
	buf.Free()
	// Output:
	// 0 112
}

func ExampleBuffer_Detach() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	buf.WriteString("a value to keep")
	v := buf.Detach() // the caller's now: keep it, Ref it, Free it
	fmt.Printf("%q %d %d\n", v, buf.Len(), len(v))
	h.Free(v)
	buf.Free()
	// Output:
	// "a value to keep" 0 15
}

func ExampleBuffer_ReadFrom() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	n, err := buf.ReadFrom(strings.NewReader("read until EOF"))
	fmt.Println(n, err, buf.String())
	// Output:
	// 14 <nil> read until EOF
}

func ExampleBuffer_WriteTo() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.WriteString("to stdout\n")
	io.Copy(os.Stdout, buf) // io.Copy uses WriteTo
	fmt.Println(buf.Len())
	// Output:
	// to stdout
	// 0
}

func ExampleBuffer_Write() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	n, err := buf.Write([]byte("bytes"))
	fmt.Println(n, err, buf.String())
	// Output:
	// 5 <nil> bytes
}

func ExampleBuffer_WriteString() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.WriteString("a string")
	fmt.Println(buf.String())
	// Output:
	// a string
}

func ExampleBuffer_WriteByte() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	for c := byte('a'); c <= 'e'; c++ {
		buf.WriteByte(c)
	}
	fmt.Println(buf.String())
	// Output:
	// abcde
}

func ExampleBuffer_WriteRune() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	n, _ := buf.WriteRune('€')
	fmt.Println(n, buf.String())
	// Output:
	// 3 €
}

func ExampleBuffer_Read() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.WriteString("abcdef")
	p := make([]byte, 4)
	n, err := buf.Read(p)
	fmt.Println(n, err, string(p[:n]), buf.String())
	n, err = buf.Read(p)
	fmt.Println(n, err, string(p[:n]))
	n, err = buf.Read(p)
	fmt.Println(n, err)
	// Output:
	// 4 <nil> abcd ef
	// 2 <nil> ef
	// 0 EOF
}

func ExampleBuffer_ReadByte() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.WriteString("hi")
	for {
		c, err := buf.ReadByte()
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Printf("%c ", c)
	}
	// Output:
	// h i EOF
}

// Bytes is a view of the unread bytes in the Buffer's block, valid until
// the next write.
func ExampleBuffer_Bytes() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.WriteString("view")
	fmt.Printf("%s %d\n", buf.Bytes(), len(buf.Bytes()))
	// Output:
	// view 4
}

func ExampleBuffer_String() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	fmt.Fprintf(buf, "%d-%d", 1, 2)
	s := buf.String() // a copy on the Go heap: it outlives the Buffer
	buf.Free()
	fmt.Println(s)
	// Output:
	// 1-2
}

func ExampleBuffer_Len() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.WriteString("12345")
	buf.ReadByte()
	fmt.Println(buf.Len())
	// Output:
	// 4
}

func ExampleBuffer_Cap() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	fmt.Println(buf.Cap()) // no block yet
	buf.WriteString("x")
	fmt.Println(buf.Cap() > 0)
	// Output:
	// 0
	// true
}

func ExampleBuffer_Grow() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.Grow(1000) // the next 1000 bytes of writes take no new block
	fmt.Println(buf.Cap() >= 1000, buf.Len())
	// Output:
	// true 0
}

func ExampleBuffer_Truncate() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.WriteString("keep this, not this")
	buf.Truncate(9)
	fmt.Println(buf.String())
	// Output:
	// keep this
}

func ExampleBuffer_Reset() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(64)
	defer buf.Free()
	buf.WriteString("first")
	buf.Reset() // empty, same block
	buf.WriteString("second")
	fmt.Println(buf.String(), buf.Cap())
	// Output:
	// second 64
}

// Free gives the block back; the Buffer stays usable and takes a new block
// at its next write, so a deferred Free is safe after an early one.
func ExampleBuffer_Free() {
	h, _ := offheap.NewHeap(offheap.Options{})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(64)
	defer buf.Free()
	buf.WriteString("x")
	buf.Free()
	fmt.Println(buf.Len(), buf.Cap(), h.Stats().LiveBlocks)
	// Output:
	// 0 0 0
}

// TryGrow and TryNewBuffer return the error Grow and NewBuffer would panic
// with; the Buffer keeps its bytes and its block.
func ExampleBuffer_TryGrow() {
	h, _ := offheap.NewHeap(offheap.Options{Limit: 8 << 20})
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Println(err) // a leak, or a write after free found at Close
		}
	}()

	buf := h.NewBuffer(0)
	defer buf.Free()
	buf.WriteString("kept")
	err := buf.TryGrow(64 << 20)
	fmt.Println(errors.Is(err, offheap.ErrLimit), buf.String())
	_, err = h.TryNewBuffer(64 << 20)
	fmt.Println(errors.Is(err, offheap.ErrLimit))
	fmt.Println(buf.TryGrow(1<<20), buf.Cap() >= 1<<20) // this one fits
	// Output:
	// true kept
	// true
	// <nil> true
}
