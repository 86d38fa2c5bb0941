package shapes

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

// TestSnapshotLoadInChild checks that the child process loads the snapshot
// it is given and counts what the load kept: a snapshot of every key keeps
// all n, and the positive control, a snapshot of half the keys, keeps n/2,
// so a child that skipped the load or reported n unconditionally fails
// here, as the shape's comparison with the load in its own process would.
// A path with no snapshot is an error, not a count of 0.
func TestSnapshotLoadInChild(t *testing.T) {
	arm, ok := kvarms.Named("offheap-kv")
	if !ok {
		t.Fatal("no offheap-kv arm")
	}
	const n = 2000
	ks := memoKeys(n, keyHex16)
	o := kvarms.Options{MaxBytes: 64 << 20, Entries: n, EntryBytes: 16 + (bigcMin+bigcMax)/2}
	save := func(name string, keys int) string {
		t.Helper()
		c, err := newKV(arm, o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := range keys {
			c.Set(ks.key(i), value(i, bigValueSize(i, 0)))
		}
		path := filepath.Join(t.TempDir(), name)
		if err := c.(kvarms.Saver).SaveToFile(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name       string
		keys, kept int
	}{{"every key", n, n}, {"half the keys (the control)", n / 2, n / 2}} {
		r, err := loadInChild(snapLoad{Arm: arm.Name, Path: save("snapshot", tc.keys), Options: o, N: n})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Kept != tc.kept || r.LoadNs <= 0 {
			t.Errorf("%s: the child kept %d entries in %d ns, want %d", tc.name, r.Kept, r.LoadNs, tc.kept)
		}
	}
	missing := filepath.Join(t.TempDir(), "none")
	if r, err := loadInChild(snapLoad{Arm: arm.Name, Path: missing, Options: o, N: n}); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("a missing snapshot: %+v, %v; want an error naming it", r, err)
	}
}
