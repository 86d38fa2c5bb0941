// Package offheappprof serves a heap's allocation profile over HTTP, in the
// format go tool pprof reads, as net/http/pprof serves the Go heap's. Mount
// it beside net/http/pprof:
//
//	mux.Handle("/debug/offheap/heap", offheappprof.Handler(offheap.Default()))
//
// or, on http.DefaultServeMux, which importing net/http/pprof fills,
//
//	http.Handle("/debug/offheap/heap", offheappprof.Handler(offheap.Default()))
//
// and look at it with
//
//	go tool pprof http://localhost:6060/debug/offheap/heap
//
// which shows the off-heap bytes still live by the line that allocated
// them (-sample_index=alloc_space for every byte allocated). The profile is
// the one Heap.WriteProfile writes, sampled at Options.ProfileBytes.
package offheappprof

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/offheap/offheap"
)

// Handler returns an http.Handler that serves h's allocation profile (see
// Heap.WriteProfile) as a gzipped pprof protobuf, for a GET or a HEAD. It
// panics if h is nil.
func Handler(h *offheap.Heap) http.Handler {
	if h == nil {
		panic("offheap: offheappprof.Handler of a nil heap")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "offheap: the profile is read with GET", http.StatusMethodNotAllowed)
			return
		}
		// Written whole before the headers go, so that a failure can still
		// be an error status.
		var buf bytes.Buffer
		if err := h.WriteProfile(&buf); err != nil {
			http.Error(w, fmt.Sprintf("offheap: writing the profile: %v", err), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="offheap-heap.pb.gz"`)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Write(buf.Bytes())
	})
}
