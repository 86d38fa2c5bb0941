package offheapexpvar

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/offheap/offheap"
)

// TestEveryStatsField: the Var's JSON has a key for every field of
// offheap.Stats, and for every field of each offheap.ClassStats, so a
// field added to either shows in /debug/vars or fails here.
func TestEveryStatsField(t *testing.T) {
	h := newHeap(t)
	h.Free(h.Alloc(64))
	var s map[string]json.RawMessage
	if err := json.Unmarshal([]byte(Var(h).String()), &s); err != nil {
		t.Fatal(err)
	}
	if m := missingKeys(reflect.TypeFor[offheap.Stats](), s); m != nil {
		t.Errorf("offheap.Stats fields missing from the Var: %v", m)
	}
	var classes []map[string]json.RawMessage
	if err := json.Unmarshal(s["Classes"], &classes); err != nil || len(classes) == 0 {
		t.Fatalf("the Var's Classes: %v (%d classes)", err, len(classes))
	}
	if m := missingKeys(reflect.TypeFor[offheap.ClassStats](), classes[0]); m != nil {
		t.Errorf("offheap.ClassStats fields missing from the Var: %v", m)
	}
	// The positive control: a Stats with one field more is caught.
	type grown struct {
		offheap.Stats
		NewFigure uint64
	}
	if m := missingKeys(reflect.TypeFor[grown](), s); len(m) != 1 || m[0] != "NewFigure" {
		t.Errorf("a Stats with a field more: missingKeys reports %v, want [NewFigure]", m)
	}
}

// missingKeys returns the exported fields of t, with those of its embedded
// structs, that have no key in the JSON object obj: the key is the Go
// field's name, as the package doc promises.
func missingKeys(t reflect.Type, obj map[string]json.RawMessage) []string {
	var out []string
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		if _, ok := obj[f.Name]; !ok {
			out = append(out, f.Name)
		}
	}
	return out
}
