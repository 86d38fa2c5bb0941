package offheappprof_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/offheappprof"
)

// TestHandler: a GET serves the heap's profile, gzipped, as WriteProfile
// writes it; another method is refused with 405 and an Allow header.
func TestHandler(t *testing.T) {
	h, err := offheap.NewHeap(offheap.Options{ProfileBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Alloc(4096)
	srv := httptest.NewServer(offheappprof.Handler(h))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the body is not gzipped: %v", err)
	}
	if raw, err := io.ReadAll(zr); err != nil || !bytes.Contains(raw, []byte("inuse_space")) {
		t.Fatalf("the body is not a heap profile: %v, %d bytes", err, len(raw))
	}

	resp, err = http.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %s, Allow %q; want 405 and GET, HEAD", resp.Status, resp.Header.Get("Allow"))
	}
}

// TestHandlerNilHeap: Handler of a nil heap panics at once, naming the
// problem, rather than at the first request.
func TestHandlerNilHeap(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "offheap:") {
			t.Fatalf("Handler(nil): panic %v, want one starting offheap:", r)
		}
	}()
	offheappprof.Handler(nil)
}
