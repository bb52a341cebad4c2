package rpc

import (
	"context"
	"net/http"
	"testing"
)

// TestTraceparentFromHeader: without a server span, the caller's valid
// traceparent header is kept whatever the case of its name on the wire
// (net/http stores it canonically), an invalid one is dropped, and a
// request without one gets none.
func TestTraceparentFromHeader(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		name   string
		header http.Header
		want   string
	}{
		{"none", http.Header{}, ""},
		{"set canonically", func() http.Header { h := http.Header{}; h.Set("traceparent", tp); return h }(), tp},
		{"invalid", http.Header{"Traceparent": {"00-zz"}}, ""},
		{"other headers only", http.Header{"Content-Type": {"application/proto"}}, ""},
	} {
		if got := traceparent(context.Background(), c.header); got != c.want {
			t.Errorf("%s: traceparent %q, want %q", c.name, got, c.want)
		}
	}
}
