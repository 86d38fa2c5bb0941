package shapes

// The cache-snapshot shape loads each snapshot in a new process, as a
// program that restarts loads it: in this one, an arm would write to
// memory its earlier caches left resident (fastcache keeps the chunks of
// every cache it ever made, and hands them to the next), which a restart
// does not have. The child is this same binary, told by an environment
// variable what to load; it runs the load in its package init, before any
// flag or test is looked at, and exits.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/offheap/offheap/cmd/offheap/internal/kvarms"
)

// snapChildEnv holds, in the child's environment, the snapLoad to run.
const snapChildEnv = "OFFHEAP_BENCH_SNAPSHOT_LOAD"

// snapLoad is what the child loads: arm's snapshot at Path, of N entries.
type snapLoad struct {
	Arm     string
	Path    string
	Options kvarms.Options
	N       int
}

// snapLoaded is what the child reports.
type snapLoaded struct {
	LoadNs int64 // the load's wall time
	CPUNs  int64 // its user and system time, every thread
	Faults int64 // its page faults with no I/O
	Usage  bool  // whether CPUNs and Faults were measured
	Kept   int   // entries the loaded cache holds, each checked
	Err    string
}

func init() {
	if spec := os.Getenv(snapChildEnv); spec != "" {
		var l snapLoad
		r := snapLoaded{Err: "the spec: "}
		if err := json.Unmarshal([]byte(spec), &l); err == nil {
			r = runSnapLoad(l)
		} else {
			r.Err += err.Error()
		}
		if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// runSnapLoad is the child's work: the load, timed, then its entries
// counted (outside the time).
func runSnapLoad(l snapLoad) snapLoaded {
	arm, ok := kvarms.Named(l.Arm)
	if !ok || arm.Load == nil {
		return snapLoaded{Err: fmt.Sprintf("no arm %q that loads snapshots", l.Arm)}
	}
	cpu0, flt0, _ := procUsage()
	t0 := time.Now()
	c, err := arm.Load(l.Path, l.Options)
	el := time.Since(t0)
	cpu1, flt1, usage := procUsage()
	if err != nil {
		return snapLoaded{Err: err.Error()}
	}
	defer c.Close()
	ks := memoKeys(l.N, keyHex16)
	kept, _ := countKept(c, ks, l.N, func(i int) int { return bigValueSize(i, 0) })
	return snapLoaded{LoadNs: int64(el), CPUNs: int64(cpu1 - cpu0), Faults: flt1 - flt0, Usage: usage, Kept: kept}
}

// loadInChild runs l in a new process of this binary.
func loadInChild(l snapLoad) (snapLoaded, error) {
	self, err := os.Executable()
	if err != nil {
		return snapLoaded{}, err
	}
	spec, err := json.Marshal(l)
	if err != nil {
		return snapLoaded{}, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), snapChildEnv+"="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return snapLoaded{}, fmt.Errorf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var r snapLoaded
	if err := json.Unmarshal(out, &r); err != nil {
		return snapLoaded{}, fmt.Errorf("its report %q: %v", out, err)
	}
	if r.Err != "" {
		return snapLoaded{}, fmt.Errorf("%s", r.Err)
	}
	return r, nil
}
