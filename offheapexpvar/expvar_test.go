package offheapexpvar

import (
	"encoding/json"
	"expvar"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/offheap/offheap"
)

func newHeap(t *testing.T) *offheap.Heap {
	t.Helper()
	h, err := offheap.NewHeap(offheap.Options{MagazineDepth: -1})
	if err != nil {
		t.Skip(err) // a system without a backend
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestVar reads the Var as JSON and gets the heap's Stats back, as it is at
// each read.
func TestVar(t *testing.T) {
	h := newHeap(t)
	v := Var(h)
	read := func() offheap.Stats {
		t.Helper()
		var s offheap.Stats
		if err := json.Unmarshal([]byte(v.String()), &s); err != nil {
			t.Fatalf("the Var is not the JSON of a Stats: %v\n%s", err, v.String())
		}
		return s
	}
	if s, want := read(), h.Stats(); !reflect.DeepEqual(s, want) {
		t.Errorf("a new heap: the Var reads %+v, want %+v", s, want)
	}
	b := h.Alloc(1000)
	h.Free(h.Alloc(64))
	s, want := read(), h.Stats()
	if !reflect.DeepEqual(s, want) {
		t.Errorf("after three operations: the Var reads %+v, want %+v", s, want)
	}
	if s.Allocs != 2 || s.Frees != 1 || s.InUseBytes == 0 || s.MappedBytes == 0 {
		t.Errorf("the Var reads %d allocs, %d frees, %d bytes in use, %d mapped: not the heap's operations", s.Allocs, s.Frees, s.InUseBytes, s.MappedBytes)
	}
	h.Free(b)
}

// TestPublish serves /debug/vars and finds the heap there, and a second
// Publish of the name is refused.
func TestPublish(t *testing.T) {
	h := newHeap(t)
	h.Alloc(4096)
	// expvar's names are process-wide: a fresh one for each run (-count).
	runs++
	name := fmt.Sprintf("offheap_test_heap_%d", runs)
	Publish(name, h)
	rec := httptest.NewRecorder()
	expvar.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/debug/vars", nil))
	var vars map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &vars); err != nil {
		t.Fatalf("/debug/vars: %v", err)
	}
	var s offheap.Stats
	if err := json.Unmarshal(vars[name], &s); err != nil || s.Allocs != 1 || s.InUseBytes < 4096 {
		t.Fatalf("/debug/vars has %s = %s (%v), want the heap's one Alloc of 4096 bytes", name, vars[name], err)
	}

	defer func() {
		msg, _ := recover().(string)
		if !strings.HasPrefix(msg, "offheap:") || !strings.Contains(msg, "already published") {
			t.Errorf("a second Publish of the name: panic %q, want one starting \"offheap:\" that says it is already published", msg)
		}
	}()
	Publish(name, h)
}

var runs int

func TestVarNil(t *testing.T) {
	defer func() {
		if msg, _ := recover().(string); !strings.HasPrefix(msg, "offheap:") {
			t.Errorf("Var(nil): panic %q, want one starting \"offheap:\"", msg)
		}
	}()
	Var(nil)
}
