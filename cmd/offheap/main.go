// Command offheap is the offheap project's tool. Its one subcommand so far,
// bench, compares offheap with the allocators Go programs use today, on this
// machine:
//
//	go run ./cmd/offheap bench
//	go run ./cmd/offheap bench -h
//
// It is a module of its own (github.com/offheap/offheap/cmd/offheap), so
// that its plotting and terminal dependencies stay out of the library's
// go.mod; the repository's go.work makes the commands above work from the
// repository root. The measuring lives in internal/bench, the arms in
// internal/arms and the shapes in internal/shapes; this file only parses
// flags and wires up the output.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	_ "github.com/offheap/offheap/cmd/offheap/internal/arms" // registers the arms
	"github.com/offheap/offheap/cmd/offheap/internal/bench"
	_ "github.com/offheap/offheap/cmd/offheap/internal/shapes" // registers the shapes
)

// defaultRunTime is what a default run takes on a 2-core machine, as the
// README states it.
const defaultRunTime = "75 s (77 s measured, more on a loaded machine)"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, for tests: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "offheap: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: offheap <command> [flags]

commands:
  bench   compare offheap with other allocators on this machine (offheap bench -h)
`)
}

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("offheap bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shapes := fs.String("shapes", "", "comma-separated shapes to run (default: every quick shape)")
	arms := fs.String("arms", "", "comma-separated arms to compare (default: every default arm)")
	workers := fs.String("workers", "", "comma-separated worker counts (default: 1,2,4 and 2x GOMAXPROCS)")
	runs := fs.Int("runs", bench.DefaultRuns, "runs of every measurement, rows interleaved; the min and median are reported\n(benchstat needs 6 or more for intervals; the gc shape makes at most 3\nbut with -long)")
	long := fs.Bool("long", false, "seed-scale sizes (minutes, not seconds)")
	out := fs.String("out", "offheap-report", "directory for results.txt, results.json, the SVG plots\nand index.html (\"\" for none)")
	jsonOut := fs.Bool("json", false, "write the JSON report to stdout instead of the tables")
	scale := fs.Float64("scale", 1, "shrink every size by this factor, 0 < scale <= 1 (for smoke tests)")
	var heapSize byteSize
	fs.Var(&heapSize, "bigheap-size", "the bigheap shape's heap `size`: bytes, or a count with a unit (256MiB, 16GiB)\n(default 2GiB, 8GiB with -long)")
	// Parse reports its own error; the long help goes to stdout only when
	// asked for, so that it can be paged.
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			benchUsage(stdout, fs)
			return 0
		}
		fmt.Fprintln(stderr, "run 'offheap bench -h' for the flags, shapes and arms")
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "offheap bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg := bench.Config{Shapes: list(*shapes), Arms: list(*arms), Runs: *runs, Long: *long, Scale: *scale,
		HeapSize: int64(heapSize)}
	if *scale <= 0 || *scale > 1 {
		fmt.Fprintf(stderr, "offheap bench: -scale %v: must be in (0, 1]\n", *scale)
		return 2
	}
	if *runs < 1 {
		fmt.Fprintf(stderr, "offheap bench: -runs %d: must be at least 1\n", *runs)
		return 2
	}
	for _, s := range list(*workers) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "offheap bench: -workers: %q is not a positive count\n", s)
			return 2
		}
		cfg.Workers = append(cfg.Workers, n)
	}
	var stop func()
	cfg.Progress, stop = progress(stdout, stderr)
	r, err := bench.Run(cfg)
	stop()
	if err != nil {
		fmt.Fprintf(stderr, "offheap bench: %v\n", err)
		return 1
	}
	if *jsonOut {
		err = bench.WriteJSON(stdout, r)
	} else {
		err = bench.WriteText(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "offheap bench: writing the report: %v\n", err)
		return 1
	}
	if *out != "" {
		if err := bench.WriteDir(*out, r); err != nil {
			fmt.Fprintf(stderr, "offheap bench: writing %s: %v\n", *out, err)
			return 1
		}
		fmt.Fprintf(stderr, "report written to %s (index.html, results.txt for benchstat, results.json)\n", *out)
	}
	return 0
}

// progress returns what reports the run's progress on stderr, and what
// stops it once the run is over: a bar that clears itself when both stdout
// and stderr are terminals, a line per shape otherwise (stdout piped or
// redirected, where the tables come only at the end and a silent minute
// would look like a hang).
func progress(stdout, stderr io.Writer) (report func(bench.Progress), stop func()) {
	if isTerminal(stdout) && isTerminal(stderr) {
		var bar *progressbar.ProgressBar
		return func(p bench.Progress) {
			if bar == nil {
				bar = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(stderr),
					progressbar.OptionSetWidth(30), progressbar.OptionShowCount(),
					progressbar.OptionClearOnFinish(), progressbar.OptionSetPredictTime(true))
			}
			desc := p.Trial
			if desc == "" {
				desc = p.Shape // its start
			}
			if p.Note != "" {
				desc += ": " + p.Note
			}
			bar.Describe(fmt.Sprintf("%-48s", desc))
			bar.Set(p.Done)
			if p.Done == p.Total {
				bar.Finish()
			}
		}, func() {}
	}
	return lines(stderr)
}

// lines is the piped run's progress: a line per shape, and between them a
// line on the trial at hand whenever quietFor has passed since the last
// one, written when a trial reports, or, for a trial that runs longer
// without a word, by a ticker: no shape is silent for longer than quietFor
// and a tick (an eighth of it).
func lines(stderr io.Writer) (report func(bench.Progress), stop func()) {
	var mu sync.Mutex
	last := time.Now()
	var at bench.Progress // the last report; Shape "" before the first
	var atWhen time.Time  // when it came
	tick := time.NewTicker(quietFor / 8)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			mu.Lock()
			if at.Shape != "" && !at.ShapeDone && time.Since(last) >= quietFor {
				fmt.Fprintf(stderr, "offheap bench: shape %d of %d, %s, %.0fs: running, %d of %d trials done\n",
					at.ShapeIndex, at.Shapes, at.Shape, (at.ShapeElapsed + time.Since(atWhen)).Seconds(), at.Done, at.Total)
				last = time.Now()
			}
			mu.Unlock()
		}
	}()
	stop = func() {
		tick.Stop()
		close(done)
	}
	report = func(p bench.Progress) {
		mu.Lock()
		defer mu.Unlock()
		at, atWhen = p, time.Now()
		switch {
		case p.ShapeDone:
			fmt.Fprintf(stderr, "offheap bench: shape %d of %d, %s, done in %.1fs (%d of %d trials)\n",
				p.ShapeIndex, p.Shapes, p.Shape, p.ShapeElapsed.Seconds(), p.Done, p.Total)
		case p.Trial == "": // the shape's start
			fmt.Fprintf(stderr, "offheap bench: shape %d of %d, %s, %s\n", p.ShapeIndex, p.Shapes, p.Shape, p.Note)
		case time.Since(last) < quietFor:
			return
		case p.Note != "":
			head := fmt.Sprintf("offheap bench: shape %d of %d, %s, %.0fs: ", p.ShapeIndex, p.Shapes, p.Shape, p.ShapeElapsed.Seconds())
			fmt.Fprintln(stderr, fit(head, p.Trial, ": "+p.Note))
		default:
			head := fmt.Sprintf("offheap bench: shape %d of %d, %s, %.0fs: ", p.ShapeIndex, p.Shapes, p.Shape, p.ShapeElapsed.Seconds())
			fmt.Fprintln(stderr, fit(head, p.Trial, fmt.Sprintf(" done (%d of %d trials)", p.Done, p.Total)))
		}
		last = time.Now()
	}
	return report, stop
}

// fit joins head, trial and tail in bench.Width columns, cutting the
// middle of trial (a benchmark name, the one part that can run long) where
// the whole would not fit.
func fit(head, trial, tail string) string {
	if over := len(head) + len(trial) + len(tail) - bench.Width; over > 0 && len(trial) > over+3 {
		keep := len(trial) - over - 3
		trial = trial[:keep/2] + "..." + trial[len(trial)-(keep-keep/2):]
	}
	return head + trial + tail
}

// quietFor is the longest a piped run goes without a progress line, as far
// as its trials report (bench.Trial.Note).
const quietFor = 4 * time.Second

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// benchUsage explains every flag, shape and arm; the shapes and arms come
// from the registry, so a new one documents itself.
func benchUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `usage: offheap bench [flags]

Runs workload shapes against allocator arms, prints a table per shape, then
checks each headline figure against its speed target ("target met", "target
missed", or "not judged" and why) and counts them. A default run takes about
%s on 2 cores.

flags:
`, defaultRunTime)
	fs.SetOutput(w)
	fs.PrintDefaults()
	var metrics []bench.Metric
	for _, s := range bench.Shapes() {
		metrics = append(metrics, s.Metrics...)
	}
	fmt.Fprintf(w, "\ncolumns of the tables:\n")
	bench.WriteLegend(w, metrics)
	nameWidth := 0
	for _, s := range bench.Shapes() {
		nameWidth = max(nameWidth, len(s.Name)+1)
		for _, way := range s.Ways {
			nameWidth = max(nameWidth, len("  way ")+len(way.Name))
		}
	}
	for _, a := range bench.Arms() {
		nameWidth = max(nameWidth, len(a.Name)+1)
	}
	fmt.Fprintf(w, "\nshapes (* = run by default; a shape with ways has rows of its own, the others a row per arm):\n")
	for _, s := range bench.Shapes() {
		bench.WriteItem(w, nameWidth, s.Name+star(s.Quick), fmt.Sprintf("(%s) %s", s.Work, s.Doc))
		// Ways that are also arms (the key-value caches of the cache
		// shapes) are named on one line; the arms' list explains them.
		var asArms []string
		for _, way := range s.Ways {
			if isArm(way.Name) {
				asArms = append(asArms, way.Name)
				continue
			}
			bench.WriteItem(w, nameWidth, "  way "+way.Name, way.Doc)
		}
		if len(asArms) > 0 {
			bench.WriteItem(w, nameWidth, "  ways", strings.Join(asArms, ", ")+" (arms below; -arms picks among them)")
		}
	}
	fmt.Fprintf(w, "\narms (* = run by default):\n")
	for _, a := range bench.Arms() {
		bench.WriteItem(w, nameWidth, a.Name+star(a.Default), a.Doc)
	}
	fmt.Fprint(w, `
The C allocators (cgo-malloc, jemalloc, mimalloc) are arms only in a build
with the offheap_cgo tag:
  apt-get install -y libjemalloc-dev libmimalloc-dev
  go run -tags offheap_cgo ./cmd/offheap bench -arms offheap,go-make,cgo-malloc,jemalloc,mimalloc
`)
}

// byteSize is a flag's size in bytes, written as a count with an optional
// binary unit (B, KiB, MiB, GiB, TiB; K, M, G, T mean the same).
type byteSize int64

// byteUnits are the units byteSize reads, each a power of 1024.
var byteUnits = []struct {
	names []string
	shift uint
}{{[]string{"TiB", "T"}, 40}, {[]string{"GiB", "G"}, 30}, {[]string{"MiB", "M"}, 20}, {[]string{"KiB", "K"}, 10}, {[]string{"B", ""}, 0}}

func (b *byteSize) Set(s string) error {
	for _, u := range byteUnits {
		for _, name := range u.names {
			num, ok := strings.CutSuffix(strings.TrimSpace(s), name)
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 63-int(u.shift))
			if err != nil || n == 0 {
				return fmt.Errorf("%q is not a positive size such as 256MiB or 2GiB", s)
			}
			*b = byteSize(n << u.shift)
			return nil
		}
	}
	return fmt.Errorf("%q is not a positive size such as 256MiB or 2GiB", s)
}

// String writes the size in its largest whole unit; 0, the unset value,
// as "" so that the flag's help shows no default of its own.
func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return ""
	}
	for _, u := range byteUnits {
		if *b%(1<<u.shift) == 0 {
			return strconv.FormatInt(int64(*b)>>u.shift, 10) + u.names[0]
		}
	}
	return strconv.FormatInt(int64(*b), 10) + "B"
}

// isArm reports whether name is a registered arm's.
func isArm(name string) bool {
	for _, a := range bench.Arms() {
		if a.Name == name {
			return true
		}
	}
	return false
}

func star(b bool) string {
	if b {
		return "*"
	}
	return ""
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
