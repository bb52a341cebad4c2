package app_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// answer posts body to path with the given headers over p's HTTP client
// and returns everything the client sees of the answer's error: the body
// and the grpc-status and grpc-message headers or trailers (decoded).
func answer(t *testing.T, srv *ringtest.Server, p ringcast.Protocol, path, ctype, body string, hdr map[string]string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if p == ringcast.ProtocolGRPC {
		req.Header.Set("TE", "trailers")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := srv.HTTPClient(p).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	got := string(b)
	for _, h := range []http.Header{res.Header, res.Trailer} {
		if m := h.Get("Grpc-Message"); m != "" {
			dm, _ := url.PathUnescape(m)
			got += " grpc-status:" + h.Get("Grpc-Status") + " grpc-message:" + dm
		}
	}
	return got
}

// TestTruncatedStreamRequestSaysSoOnce: a SubscribeEvents request whose
// body ends inside its message is answered invalid_argument, saying the
// message could not be read, on Connect, gRPC and gRPC-Web — without a
// second error code inside the message ("internal: protocol error: …").
func TestTruncatedStreamRequestSaysSoOnce(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	truncated := string([]byte{0, 0, 0, 0, 9}) + "{}"
	for p, ctype := range map[ringcast.Protocol]string{
		ringcast.ProtocolConnect: "application/connect+json",
		ringcast.ProtocolGRPC:    "application/grpc+json",
		ringcast.ProtocolGRPCWeb: "application/grpc-web+json",
	} {
		got := answer(t, srv, p, "/ringcast.v1.EventService/SubscribeEvents", ctype, truncated, nil)
		if !strings.Contains(got, "the request message could not be read: ") || strings.Contains(got, "internal:") ||
			strings.Contains(got, "protocol error") || strings.Contains(got, "unexpected EOF") ||
			!(strings.Contains(got, `"code":"invalid_argument"`) || strings.Contains(got, "grpc-status:3")) {
			t.Errorf("%s: %q; want invalid_argument saying the message could not be read, no code or I/O error inside", p, got)
		}
	}
}

// TestBadConnectTimeoutNamesTheHeader: a Connect request whose
// Connect-Timeout-Ms is not a number of milliseconds is refused
// (invalid_argument) naming the header and what it takes, not the number
// parser — unary and streaming, on the event service and on gRPC health.
func TestBadConnectTimeoutNamesTheHeader(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	env := string([]byte{0, 0, 0, 0, 2}) + "{}"
	for _, tc := range []struct{ path, ctype, body string }{
		{"/ringcast.v1.EventService/GetServerStatus", "application/json", "{}"},
		{"/ringcast.v1.EventService/SubscribeEvents", "application/connect+json", env},
		{"/grpc.health.v1.Health/Check", "application/json", "{}"},
	} {
		for _, v := range []string{"abc", "-5", "12345678901", "1e3"} {
			got := answer(t, srv, ringcast.ProtocolConnect, tc.path, tc.ctype, tc.body, map[string]string{"Connect-Timeout-Ms": v})
			if !strings.Contains(got, `"code":"invalid_argument"`) || !strings.Contains(got, "Connect-Timeout-Ms must be a whole number of milliseconds") ||
				strings.Contains(got, "strconv") {
				t.Errorf("%s with Connect-Timeout-Ms %q: %q; want invalid_argument naming the header", tc.path, v, got)
			}
		}
	}
	// A good timeout is served.
	if got := answer(t, srv, ringcast.ProtocolConnect, "/ringcast.v1.EventService/GetServerStatus", "application/json", "{}", map[string]string{"Connect-Timeout-Ms": "5000"}); !strings.Contains(got, "instanceEpoch") {
		t.Errorf("with Connect-Timeout-Ms 5000: %q", got)
	}
}
