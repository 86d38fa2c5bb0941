package offheap

import "testing"

// TestSizeClassLookup checks every small size maps to the smallest class that
// holds it.
func TestSizeClassLookup(t *testing.T) {
	for n := 1; n <= maxSmall; n++ {
		c := sizeClass(n)
		if c == 0 || c >= numClasses {
			t.Fatalf("sizeClass(%d) = %d, out of range", n, c)
		}
		if int(classSize[c]) < n {
			t.Fatalf("sizeClass(%d) = %d of size %d: too small", n, c, classSize[c])
		}
		if c > 1 && int(classSize[c-1]) >= n {
			t.Fatalf("sizeClass(%d) = %d, but class %d (size %d) fits", n, c, c-1, classSize[c-1])
		}
	}
}

// TestSizeClassShape checks the table's promises: alignment, waste and span fit.
func TestSizeClassShape(t *testing.T) {
	if classSize[numClasses-1] != maxSmall {
		t.Fatalf("largest class is %d, want %d", classSize[numClasses-1], maxSmall)
	}
	for c := 1; c < numClasses; c++ {
		size := int(classSize[c])
		if size > 8 && size%16 != 0 {
			t.Errorf("class %d size %d is not 16-byte aligned", c, size)
		}
		span := int(classPages[c]) * pageSize
		if int(classBlocks[c]) != span/size {
			t.Errorf("class %d: %d blocks, want %d", c, classBlocks[c], span/size)
		}
		if tail := span % size; tail*8 > span {
			t.Errorf("class %d: tail waste %d of %d is above 1/8", c, tail, span)
		}
		if prev := int(classSize[c-1]); size > 256 && float64(size-prev-1)/float64(size) > 0.125 {
			t.Errorf("class %d: worst internal waste above 1/8", c)
		}
	}
}

// TestDivMulExact checks that Free's multiply-and-shift division is exact for
// every offset in every span: a block start has remainder 0, and nothing
// else does.
func TestDivMulExact(t *testing.T) {
	for c := 1; c < numClasses; c++ {
		size := uint64(classSize[c])
		span := uint64(classPages[c]) * pageSize
		for o := uint64(0); o < span; o++ {
			if q := o * classDivMul[c] >> 40; q != o/size {
				t.Fatalf("class %d: %d*divMul>>40 = %d, want %d", c, o, q, o/size)
			}
		}
	}
}

// TestDivMulControl is the positive control for TestDivMulExact: rounding
// the reciprocal down instead of up must break the division somewhere, or
// that test could not fail.
func TestDivMulControl(t *testing.T) {
	broken := 0
	for c := 1; c < numClasses; c++ {
		size := uint64(classSize[c])
		floor := uint64(1<<40) / size
		for o := size; o < uint64(classPages[c])*pageSize; o += size {
			if o*floor>>40 != o/size {
				broken++
				break
			}
		}
	}
	if broken == 0 {
		t.Fatal("a rounded-down reciprocal divided exactly everywhere: TestDivMulExact cannot tell good from bad")
	}
}
