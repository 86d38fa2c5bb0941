package offheap

// The pprof profile format, written by hand: the library module depends on
// nothing that encodes protocol buffers, and a profile needs only varints,
// length-delimited fields and packed repeated integers. Field numbers are
// those of github.com/google/pprof's proto/profile.proto.

import (
	"math"
	"os"
	"runtime"
	"strings"
	"time"
)

// Field numbers of profile.proto's messages.
const (
	// Profile
	fieldSampleType        = 1
	fieldSample            = 2
	fieldMapping           = 3
	fieldLocation          = 4
	fieldFunction          = 5
	fieldStringTable       = 6
	fieldTimeNanos         = 9
	fieldPeriodType        = 11
	fieldPeriod            = 12
	fieldDefaultSampleType = 14
	// ValueType
	fieldValueTypeType = 1
	fieldValueTypeUnit = 2
	// Sample
	fieldSampleLocation = 1
	fieldSampleValue    = 2
	fieldSampleLabel    = 3
	// Label
	fieldLabelKey = 1
	fieldLabelStr = 2
	fieldLabelNum = 3
	// Mapping
	fieldMappingID        = 1
	fieldMappingLimit     = 3
	fieldMappingFilename  = 5
	fieldMappingFunctions = 7
	fieldMappingFilenames = 8
	fieldMappingLines     = 9
	fieldMappingInline    = 10
	// Location
	fieldLocationID      = 1
	fieldLocationMapping = 2
	fieldLocationAddress = 3
	fieldLocationLine    = 4
	// Line
	fieldLineFunction = 1
	fieldLineLine     = 2
	// Function
	fieldFunctionID       = 1
	fieldFunctionName     = 2
	fieldFunctionSysName  = 3
	fieldFunctionFilename = 4
)

// protobuf appends protocol buffer fields to b.
type protobuf struct{ b []byte }

func (p *protobuf) varint(x uint64) {
	for x >= 0x80 {
		p.b = append(p.b, byte(x)|0x80)
		x >>= 7
	}
	p.b = append(p.b, byte(x))
}

// uint64 writes a varint field, unless x is 0, its default.
func (p *protobuf) uint64(field int, x uint64) {
	if x != 0 {
		p.varint(uint64(field) << 3)
		p.varint(x)
	}
}

// bytes writes a length-delimited field: a string or a message.
func (p *protobuf) bytes(field int, b []byte) {
	p.varint(uint64(field)<<3 | 2)
	p.varint(uint64(len(b)))
	p.b = append(p.b, b...)
}

// packed writes repeated integers as one packed field.
func (p *protobuf) packed(field int, xs []uint64) {
	var q protobuf
	for _, x := range xs {
		q.varint(x)
	}
	p.bytes(field, q.b)
}

// profileWriter builds one profile: its string, function and location
// tables, each entry written once.
type profileWriter struct {
	out       protobuf
	strings   map[string]uint64
	funcs     map[funcKey]uint64
	locs      map[locKey]uint64
	nextFunc  uint64
	nextLoc   uint64
	stringTab []string
}

type funcKey struct{ name, file string }

// locKey is a location: a PC, and whether the frames of the heap's own
// functions inlined at it are left out (the innermost PC of a stack).
type locKey struct {
	pc      uintptr
	trimmed bool
}

// str is the index of s in the string table.
func (w *profileWriter) str(s string) uint64 {
	if i, ok := w.strings[s]; ok {
		return i
	}
	i := uint64(len(w.stringTab))
	w.strings[s] = i
	w.stringTab = append(w.stringTab, s)
	return i
}

func (w *profileWriter) valueType(field int, typ, unit string) {
	var q protobuf
	q.uint64(fieldValueTypeType, w.str(typ))
	q.uint64(fieldValueTypeUnit, w.str(unit))
	w.out.bytes(field, q.b)
}

// encodeProfile is the protobuf of a profile of samples taken at rate (-1:
// the heap does not profile) and written at now.
func encodeProfile(samples []profSample, rate int64, now time.Time) []byte {
	w := &profileWriter{strings: map[string]uint64{}, funcs: map[funcKey]uint64{}, locs: map[locKey]uint64{}}
	w.str("")
	w.valueType(fieldSampleType, "alloc_objects", "count")
	w.valueType(fieldSampleType, "alloc_space", "bytes")
	w.valueType(fieldSampleType, "inuse_objects", "count")
	w.valueType(fieldSampleType, "inuse_space", "bytes")
	w.mapping()
	kindKey, bytesKey := w.str("kind"), w.str("bytes")
	for _, s := range samples {
		allocN, allocB := scaleSample(s.allocs, s.size, rate)
		liveN, liveB := scaleSample(s.allocs-s.frees, s.size, rate)
		var q protobuf
		q.packed(fieldSampleLocation, w.stack(s.st))
		q.packed(fieldSampleValue, []uint64{uint64(allocN), uint64(allocB), uint64(liveN), uint64(liveB)})
		var l protobuf
		l.uint64(fieldLabelKey, kindKey)
		l.uint64(fieldLabelStr, w.str(kindNames[s.kind]))
		q.bytes(fieldSampleLabel, l.b)
		l = protobuf{}
		l.uint64(fieldLabelKey, bytesKey)
		l.uint64(fieldLabelNum, s.size)
		q.bytes(fieldSampleLabel, l.b)
		w.out.bytes(fieldSample, q.b)
	}
	w.out.uint64(fieldTimeNanos, uint64(now.UnixNano()))
	w.valueType(fieldPeriodType, "space", "bytes")
	w.out.uint64(fieldPeriod, uint64(max(rate, 0)))
	w.out.uint64(fieldDefaultSampleType, w.str("inuse_space"))
	for _, s := range w.stringTab {
		w.out.bytes(fieldStringTable, []byte(s))
	}
	return w.out.b
}

// mapping writes the profile's one mapping, the program's executable, for
// every location, and says that its locations are symbolized already, so
// that pprof neither looks for the binary nor symbolizes them again.
func (w *profileWriter) mapping() {
	exe, _ := os.Executable()
	var q protobuf
	q.uint64(fieldMappingID, 1)
	q.uint64(fieldMappingLimit, math.MaxUint64)
	q.uint64(fieldMappingFilename, w.str(exe))
	for _, f := range []int{fieldMappingFunctions, fieldMappingFilenames, fieldMappingLines, fieldMappingInline} {
		q.uint64(f, 1)
	}
	w.out.bytes(fieldMapping, q.b)
}

// stack is the location IDs of stack st, innermost first, from the
// program's call into this package outwards.
func (w *profileWriter) stack(st stackID) []uint64 {
	s := st.Stack()
	if s == nil {
		return nil
	}
	var ids []uint64
	leading := true
	for _, pc := range s.Frames() {
		frames := frameLines(pc)
		if leading {
			k := 0
			for k < len(frames) && ownFrame(frames[k].Function) {
				k++
			}
			if k == len(frames) {
				continue // all the heap's
			}
			leading = false
			if k > 0 {
				ids = append(ids, w.location(locKey{pc, true}, frames[k:]))
				continue
			}
		}
		ids = append(ids, w.location(locKey{pc, false}, frames))
	}
	return ids
}

// frameLines is the frames at return PC pc, innermost first: more than one
// where calls were inlined into the function pc is in.
func frameLines(pc uintptr) []runtime.Frame {
	var out []runtime.Frame
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		out = append(out, f)
		if !more {
			return out
		}
	}
}

// ownFrame reports whether fn, a function name, is this package's or the
// runtime's: what a profile's stacks leave out above the program's call.
func ownFrame(fn string) bool {
	return strings.HasPrefix(fn, pkgPrefix) || strings.HasPrefix(fn, "runtime.")
}

// location is the ID of the location k, whose frames are frames, written
// the first time it is asked for.
func (w *profileWriter) location(k locKey, frames []runtime.Frame) uint64 {
	if id, ok := w.locs[k]; ok {
		return id
	}
	w.nextLoc++
	id := w.nextLoc
	w.locs[k] = id
	var q protobuf
	q.uint64(fieldLocationID, id)
	q.uint64(fieldLocationMapping, 1)
	q.uint64(fieldLocationAddress, uint64(k.pc))
	for _, f := range frames {
		var l protobuf
		l.uint64(fieldLineFunction, w.function(f))
		l.uint64(fieldLineLine, uint64(f.Line))
		q.bytes(fieldLocationLine, l.b)
	}
	w.out.bytes(fieldLocation, q.b)
	return id
}

// function is the ID of f's function, written the first time it is asked
// for.
func (w *profileWriter) function(f runtime.Frame) uint64 {
	k := funcKey{f.Function, f.File}
	if id, ok := w.funcs[k]; ok {
		return id
	}
	w.nextFunc++
	id := w.nextFunc
	w.funcs[k] = id
	var q protobuf
	q.uint64(fieldFunctionID, id)
	q.uint64(fieldFunctionName, w.str(f.Function))
	q.uint64(fieldFunctionSysName, w.str(f.Function))
	q.uint64(fieldFunctionFilename, w.str(f.File))
	w.out.bytes(fieldFunction, q.b)
	return id
}
