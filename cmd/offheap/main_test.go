package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/offheap/offheap/cmd/offheap/internal/bench"
)

func TestBenchCommand(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "-shapes", "pairs,live-k,gc", "-workers", "1,2", "-runs", "2", "-scale", "0.001", "-out", dir}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"Columns:", "t/t1 ", "gc-cpu-pct ", "== compute", "== pairs", "== live-k", "== gc", "== verdicts", "go-pointers"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !regexp.MustCompile(`\n\d+ targets? met, \d+ missed(, \d+ not judged)?\n$`).MatchString(out) {
		t.Errorf("stdout does not end with the tally:\n%s", out[max(0, len(out)-300):])
	}
	// stdout is not a terminal: a progress line per shape on stderr.
	for _, want := range []string{"shape 1 of 4, compute, done", "shape 4 of 4, gc, done"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	for _, f := range []string{"results.txt", "results.json", "index.html", "pairs.svg", "live-k.svg", "gc.svg", "compute.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestBenchJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "-shapes", "binsplit", "-arms", "offheap,null", "-workers", "1", "-runs", "1", "-scale", "0.001", "-out", "", "-json"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	var r bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not the JSON report: %v", err)
	}
	if len(r.Samples) != 2 {
		t.Errorf("%d samples, want 2", len(r.Samples))
	}
}

func TestBenchHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	// Every line fits the report's width; a text wrapped over lines reads
	// as one, whatever spaces break it.
	for _, line := range strings.Split(stdout.String(), "\n") {
		if line = strings.ReplaceAll(line, "\t", "    "); len(line) > bench.Width { // flag's "    \t", to column 8
			t.Errorf("a line of %d columns, wider than %d: %q", len(line), bench.Width, line)
		}
	}
	text := strings.Join(strings.Fields(stdout.String()), " ")
	explains := func(doc string) bool { return strings.Contains(text, strings.Join(strings.Fields(doc), " ")) }
	for _, s := range bench.Shapes() {
		if !strings.Contains(stdout.String(), s.Name) || !explains(s.Doc) {
			t.Errorf("-h does not explain shape %s", s.Name)
		}
		for _, m := range s.Metrics {
			if !explains(m.Doc) {
				t.Errorf("-h does not explain column %s", m.Name)
			}
		}
	}
	for _, col := range []string{"min, median", "t/t1", "ctl-speedup", "maghit-pct"} {
		if !strings.Contains(stdout.String(), "\n  "+col+" ") {
			t.Errorf("-h does not explain column %s", col)
		}
	}
	for _, a := range bench.Arms() {
		if !strings.Contains(stdout.String(), a.Name) || !explains(a.Doc) {
			t.Errorf("-h does not explain arm %s", a.Name)
		}
	}
}

func TestBenchBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench", "-shapes", "nope"}, 1, "valid shapes: "},
		{[]string{"bench", "-arms", "nope"}, 1, "valid arms"},
		{[]string{"bench", "-workers", "0"}, 2, "not a positive count"},
		{[]string{"bench", "-scale", "2"}, 2, "-scale"},
		{[]string{"bench", "-runs", "0"}, 2, "-runs 0: must be at least 1"},
		{[]string{"bench", "-bigheap-size", "2GB"}, 2, "not a positive size"},
		{[]string{"bench", "-bigheap-size", "0MiB"}, 2, "not a positive size"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{nil, 2, "usage"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// TestByteSize: -bigheap-size reads counts with binary units and writes
// them back in the largest whole one.
func TestByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want byteSize
		out  string
	}{
		{"256MiB", 256 << 20, "256MiB"}, {"2GiB", 2 << 30, "2GiB"}, {"2G", 2 << 30, "2GiB"},
		{"1536MiB", 1536 << 20, "1536MiB"}, {"4096", 4 << 10, "4KiB"}, {"100B", 100, "100B"},
	} {
		var b byteSize
		if err := b.Set(tc.in); err != nil || b != tc.want || b.String() != tc.out {
			t.Errorf("Set(%q): %d, %v, String %q; want %d, %q", tc.in, b, err, b.String(), tc.want, tc.out)
		}
	}
	var b byteSize
	if err := b.Set("16777216TiB"); err == nil {
		t.Errorf("Set(16777216TiB) = %d, want an overflow error", b)
	}
}

// TestBenchMemoryShapes: frag and drift run small, census checked, and
// report their memory figures for the offheap and make rows.
func TestBenchMemoryShapes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "-shapes", "frag,drift", "-runs", "1", "-scale", "0.05", "-out", "", "-json"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	var r bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not the JSON report: %v", err)
	}
	want := map[string][]string{
		"frag/offheap":  {"filled", "evicted", "relocated", "refilled", "moved-pct", "copy-ns", "dense-ns", "null-ns"},
		"frag/go-make":  {"filled", "evicted", "refilled"},
		"drift/offheap": {"peak", "last"},
		"drift/go-make": {"peak", "last"},
	}
	for _, s := range r.Summaries {
		for _, m := range want[s.Shape+"/"+s.Row] {
			if _, ok := s.Metrics[m]; !ok {
				t.Errorf("%s %s: no %s in %v", s.Shape, s.Row, m, s.Metrics)
			}
		}
		delete(want, s.Shape+"/"+s.Row)
	}
	for k := range want {
		t.Errorf("%s not reported", k)
	}
}

// TestBenchCacheShapes: the key-value cache shapes run small with the arms
// -arms names (and only those), report their hit ratios, and judge
// offheap-kv.
func TestBenchCacheShapes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "-shapes", "cache,cache-hit,cache-block,cache-mem,cache-big,cache-snapshot",
		"-arms", "offheap-kv,fastcache,floor,nocache",
		"-runs", "1", "-scale", "0.002", "-out", "", "-json"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	var r bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not the JSON report: %v", err)
	}
	rows := map[string]bool{}
	for _, s := range r.Summaries {
		rows[s.Row] = true
		if s.Shape == "cache" && s.Sub == "op=get" && s.Row != "nocache" && s.Metrics["hit-pct"] != 100 {
			t.Errorf("cache op=get, %s: hit-pct %v, want 100", s.Row, s.Metrics["hit-pct"])
		}
		if s.Shape == "cache-hit" && s.Row == "nocache" {
			t.Errorf("cache-hit ran nocache, which keeps nothing")
		}
	}
	for _, want := range []string{"offheap-kv", "fastcache", "floor", "nocache"} {
		if !rows[want] {
			t.Errorf("no row %s", want)
		}
	}
	if rows["otter"] {
		t.Errorf("otter ran, not named by -arms")
	}
	names := map[string]bool{}
	for _, v := range r.Verdicts {
		names[v.Name] = true
	}
	for _, want := range []string{"cache-get", "cache-bigget", "cache-setget", "cache-mixed", "cache-set", "hit-zipf-32MiB",
		"hit-scan-128MiB", "cache-block", "mem-per-entry", "mem-rss-max", "mem-delete", "big-gc", "big-goheap", "big-p999",
		"snap-save", "snap-load"} {
		if !names[want] {
			t.Errorf("no verdict %s in %v", want, names)
		}
	}
}

// TestReadmeTallies: the READMEs quote the verdict counts of the run in
// docs/bench-2core.txt; they must be that run's. Positive control: a
// tally one off is caught.
func TestReadmeTallies(t *testing.T) {
	run, err := os.ReadFile(filepath.Join("..", "..", "docs", "bench-2core.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tally := regexp.MustCompile(`(\d+) targets? met, (\d+) missed(?:, (\d+)(?: not judged| too close to judge))?`)
	want := tally.FindAllStringSubmatch(string(run), -1)
	if len(want) == 0 {
		t.Fatal("docs/bench-2core.txt has no tally")
	}
	last := want[len(want)-1][1:]
	same := func(text string) (string, bool) {
		m := tally.FindStringSubmatch(strings.Join(strings.Fields(text), " "))
		if m == nil {
			return "no tally", false
		}
		return strings.Join(m[1:], "/"), slices.Equal(m[1:], last)
	}
	for _, f := range []string{"README.md", filepath.Join("..", "..", "README.md")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := same(string(b)); !ok {
			t.Errorf("%s quotes %s; docs/bench-2core.txt's run is %s", f, got, strings.Join(last, "/"))
		}
	}
	if _, ok := same(want[len(want)-1][0]); !ok {
		t.Error("the run's own tally does not pass")
	}
	met, _ := strconv.Atoi(last[0])
	if _, ok := same(fmt.Sprintf("%d targets met, %s missed, %s not judged", met+1, last[1], last[2])); ok {
		t.Error("positive control: a tally one off passed")
	}
}
