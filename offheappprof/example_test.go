package offheappprof_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/offheap/offheap"
	"github.com/offheap/offheap/offheappprof"
)

// A server mounts the handler beside net/http/pprof's; go tool pprof
// http://host/debug/offheap/heap then reads the heap's profile.
func ExampleHandler() {
	h, err := offheap.NewHeap(offheap.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	mux := http.NewServeMux()
	mux.Handle("/debug/offheap/heap", offheappprof.Handler(h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	h.Alloc(1 << 20)
	resp, err := http.Get(srv.URL + "/debug/offheap/heap")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	// Output: 200 OK application/octet-stream
}
