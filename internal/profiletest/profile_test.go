//go:build !offheapchecked

// A checked heap does not profile (Heap.WriteProfile): under the
// offheapchecked tag every heap is checked, and TestCheckedHeapProfileEmpty
// runs instead.

package profiletest

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/offheap/offheap"
)

// rate is the tests' ProfileBytes: small, so that thousands of samples make
// the estimates' sampling error a percent or two.
const rate = 4096

func newHeap(t *testing.T, rate int) *offheap.Heap {
	t.Helper()
	return newHeapOpts(t, offheap.Options{ProfileBytes: rate})
}

func newHeapOpts(t *testing.T, opts offheap.Options) *offheap.Heap {
	t.Helper()
	h, err := offheap.NewHeap(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// readProfile writes h's profile and parses it as go tool pprof does.
func readProfile(t *testing.T, h *offheap.Heap) *profile.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := h.WriteProfile(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("parsing the profile: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("the profile is not valid: %v", err)
	}
	return p
}

// site is what the profile says of one function's allocations.
type site struct {
	allocObjects, allocSpace, inuseObjects, inuseSpace int64
	kinds                                              map[string]bool
}

// sites sums p's samples by the function of their first frame, and checks
// that no sample's first frame is offheap's own.
func sites(t *testing.T, p *profile.Profile) map[string]*site {
	t.Helper()
	want := []string{"alloc_objects/count", "alloc_space/bytes", "inuse_objects/count", "inuse_space/bytes"}
	for i, st := range p.SampleType {
		if got := st.Type + "/" + st.Unit; i >= len(want) || got != want[i] {
			t.Fatalf("sample type %d: %s, want %v", i, got, want)
		}
	}
	if p.DefaultSampleType != "inuse_space" {
		t.Errorf("default sample type %q, want inuse_space", p.DefaultSampleType)
	}
	out := map[string]*site{}
	for _, s := range p.Sample {
		if len(s.Location) == 0 || len(s.Location[0].Line) == 0 {
			t.Fatalf("a sample without a stack: %v", s)
		}
		fn := s.Location[0].Line[0].Function.Name
		if strings.HasPrefix(fn, "github.com/offheap/offheap.") {
			t.Errorf("a sample's stack starts in offheap: %s", fn)
		}
		name := fn[strings.LastIndex(fn, ".")+1:]
		x := out[name]
		if x == nil {
			x = &site{kinds: map[string]bool{}}
			out[name] = x
		}
		x.allocObjects += s.Value[0]
		x.allocSpace += s.Value[1]
		x.inuseObjects += s.Value[2]
		x.inuseSpace += s.Value[3]
		for _, k := range s.Label["kind"] {
			x.kinds[k] = true
		}
	}
	return out
}

// The two call sites of TestProfileRatio: the same number of blocks, three
// times as large at the first.
//
//go:noinline
func allocThree(h *offheap.Heap) []byte { return h.Alloc(3072) }

//go:noinline
func allocOne(h *offheap.Heap) []byte { return h.Alloc(1024) }

// TestProfileRatio: two call sites that allocate 3:1 in bytes come out 3:1
// within the sampling error, and each near the bytes it allocated; freeing
// one site's blocks drops its inuse_space to 0 and leaves its alloc_space.
//
// The error: a block of s bytes is sampled with probability q =
// 1-exp(-s/rate), so a site's estimate is a binomial count over q, whose
// relative standard deviation is sqrt((1-q)/(n q)): for n = 8000 blocks at
// rate 4096, 1.1% for 3072 bytes (q = 0.53) and 2.1% for 1024 (q = 0.22),
// 2.4% for their ratio. The test allows 15% on the ratio and 12% on each
// estimate, more than five standard deviations: a chance below 1e-7 of a
// false failure. With magazines (the allocations they serve are counted
// per P) and without (each class's central list counts them).
func TestProfileRatio(t *testing.T) {
	t.Run("magazines", func(t *testing.T) { testProfileRatio(t, newHeap(t, rate)) })
	t.Run("nomag", func(t *testing.T) {
		testProfileRatio(t, newHeapOpts(t, offheap.Options{ProfileBytes: rate, MagazineDepth: -1}))
	})
}

func testProfileRatio(t *testing.T, h *offheap.Heap) {
	const n = 8000
	three := make([][]byte, n)
	one := make([][]byte, n)
	for i := range n {
		three[i] = allocThree(h)
		one[i] = allocOne(h)
	}
	s := sites(t, readProfile(t, h))
	a, b := s["allocThree"], s["allocOne"]
	if a == nil || b == nil {
		t.Fatalf("the profile lacks a call site: %v", s)
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got/want-1) > tol {
			t.Errorf("%s: %.0f, want %.0f within %.0f%%", what, got, want, tol*100)
		}
	}
	near("alloc_space ratio (x1000)", 1000*float64(a.allocSpace)/float64(b.allocSpace), 3000, 0.15)
	near("allocThree's alloc_space", float64(a.allocSpace), 3072*n, 0.12)
	near("allocOne's alloc_space", float64(b.allocSpace), 1024*n, 0.12)
	near("allocThree's alloc_objects", float64(a.allocObjects), n, 0.12)
	near("allocThree's inuse_space", float64(a.inuseSpace), float64(a.allocSpace), 0)
	if !a.kinds["heap"] || len(a.kinds) != 1 {
		t.Errorf("allocThree's kind labels: %v, want heap", a.kinds)
	}
	t.Logf("allocThree: %d bytes allocated (%d true), allocOne: %d (%d true)", a.allocSpace, 3072*n, b.allocSpace, 1024*n)

	for _, x := range one {
		h.Free(x)
	}
	s = sites(t, readProfile(t, h))
	a2, b2 := s["allocThree"], s["allocOne"]
	if b2.inuseSpace != 0 || b2.inuseObjects != 0 {
		t.Errorf("after freeing allocOne's blocks: its inuse_space %d, inuse_objects %d, want 0", b2.inuseSpace, b2.inuseObjects)
	}
	if b2.allocSpace != b.allocSpace {
		t.Errorf("after freeing allocOne's blocks: its alloc_space %d, want %d as before", b2.allocSpace, b.allocSpace)
	}
	if a2.inuseSpace != a.inuseSpace {
		t.Errorf("allocThree's inuse_space moved to %d from %d when allocOne's blocks were freed", a2.inuseSpace, a.inuseSpace)
	}
	for _, x := range three {
		h.Free(x)
	}
}

//go:noinline
func arenaUser(a *offheap.Arena) []byte { return a.Alloc(100 << 10) }

//go:noinline
func sharedUser(h *offheap.Heap) offheap.Shared { return h.NewShared(64 << 10) }

//go:noinline
func largeUser(h *offheap.Heap) []byte { return h.Alloc(1 << 20) }

// TestProfileKinds: an Arena's chunks, a Shared's block and a large block
// are profiled where the program allocated them, labelled kind=arena,
// shared and heap, and leave inuse_space when released. At rate 4096 each
// of these blocks, 64 KiB or more, is sampled with probability above
// 1-exp(-16): the test does not depend on chance.
func TestProfileKinds(t *testing.T) {
	h := newHeap(t, rate)
	ar := h.NewArena()
	arenaUser(ar)
	sh := sharedUser(h)
	big := largeUser(h)
	s := sites(t, readProfile(t, h))
	for fn, kind := range map[string]string{"arenaUser": "arena", "sharedUser": "shared", "largeUser": "heap"} {
		x := s[fn]
		if x == nil {
			t.Fatalf("no sample at %s: %v", fn, s)
		}
		if !x.kinds[kind] || len(x.kinds) != 1 {
			t.Errorf("%s: kinds %v, want %s", fn, x.kinds, kind)
		}
		if x.inuseSpace == 0 {
			t.Errorf("%s: no inuse_space while it is live", fn)
		}
	}
	ar.Release()
	sh.Release()
	h.Free(big)
	s = sites(t, readProfile(t, h))
	for _, fn := range []string{"arenaUser", "sharedUser", "largeUser"} {
		if x := s[fn]; x.inuseSpace != 0 || x.allocSpace == 0 {
			t.Errorf("%s after its release: inuse_space %d, alloc_space %d; want 0 and what it was", fn, x.inuseSpace, x.allocSpace)
		}
	}
}

// leak allocates blocks it never frees: the line go tool pprof must name.
//
//go:noinline
func leak(h *offheap.Heap, keep *[][]byte) {
	for range 2000 {
		*keep = append(*keep, h.Alloc(4096)) // leakLine
	}
}

// TestPprofTop runs go tool pprof -top -lines on a written profile: it
// reads the file, and its top line is the line that leaks.
func TestPprofTop(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to run pprof with: %v", err)
	}
	h := newHeap(t, rate)
	var keep [][]byte
	leak(h, &keep)
	for range 2000 {
		h.Free(h.Alloc(4096)) // freed: in alloc_space only
	}
	file := filepath.Join(t.TempDir(), "offheap.pb.gz")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WriteProfile(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gobin, "tool", "pprof", "-top", "-lines", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	t.Logf("go tool pprof -top:\n%s", out)
	var first string
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") && i+1 < len(lines) {
			first = lines[i+1]
			break
		}
	}
	want := leakLine(t)
	if !strings.Contains(first, "profiletest.leak ") || !strings.HasSuffix(first, want) || !strings.Contains(string(out), "Type: inuse_space") {
		t.Errorf("go tool pprof -top's first line is %q, want the line that leaks, %s, by inuse_space", first, want)
	}
	for _, b := range keep {
		h.Free(b)
	}
}

// TestProfileOff: a heap with a negative ProfileBytes writes a valid profile
// without samples.
func TestProfileOff(t *testing.T) {
	h := newHeap(t, -1)
	for range 1000 {
		h.Alloc(64 << 10)
	}
	if p := readProfile(t, h); len(p.Sample) != 0 {
		t.Errorf("%d samples in a heap that does not profile", len(p.Sample))
	}
}

// leakLine is the end of the file and line of leak's Alloc, as pprof -lines
// prints them: "/profile_test.go:N".
func leakLine(t *testing.T) string {
	src, err := os.ReadFile("profile_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(l, "// leakLine") {
			return "/profile_test.go:" + strconv.Itoa(i+1)
		}
	}
	t.Fatal("no leakLine in profile_test.go")
	return ""
}
