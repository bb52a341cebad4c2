package sse_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestHTTP11StreamIsNotChunked: on HTTP/1.1 an /events response is not
// chunked — no Transfer-Encoding, no Content-Length, the body running to
// the connection's close — so a batch is written as it is, in one write.
// The frames follow the header directly.
func TestHTTP11StreamIsNotChunked(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	c, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // a hang guard only
	fmt.Fprintf(c, "GET /events?topic=wire HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", srv.Addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 0 || resp.ContentLength != -1 || !resp.Close {
		t.Fatalf("status %d, transfer encoding %q, content length %d, close %v; want 200, none, -1 (until close), true",
			resp.StatusCode, resp.TransferEncoding, resp.ContentLength, resp.Close)
	}
	if _, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "wire/x", Type: "t"}}, ""); err != nil {
		t.Fatal(err)
	}
	// Read the raw body (the response's reader would hide chunk framing):
	// the frames themselves, from the first byte.
	var body strings.Builder
	for !strings.Contains(body.String(), "event: commit\n") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v (after %q)", err, body.String())
		}
		body.WriteString(line)
	}
	if !strings.HasPrefix(body.String(), "retry: ") {
		t.Fatalf("body starts %q, want the retry field (no chunk size)", body.String())
	}
}
