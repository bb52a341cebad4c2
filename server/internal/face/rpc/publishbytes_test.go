package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// checkRetryAfter fails unless err is resource_exhausted carrying a
// Retry-After (header or trailer) of 1 to most seconds.
func checkRetryAfter(t *testing.T, err error, most int) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		t.Fatalf("%v, want resource_exhausted", err)
	}
	v := ce.Meta().Get("Retry-After")
	if secs, perr := strconv.Atoi(v); perr != nil || secs < 1 || secs > most {
		t.Fatalf("%v: Retry-After %q, want 1 to %d seconds", err, v, most)
	}
}

// postConnect sends a Connect unary request as JSON over plain HTTP and
// returns its status, Retry-After and body.
func postConnect(t *testing.T, hc *http.Client, url, procedure, body string) (int, string, string) {
	t.Helper()
	resp, err := hc.Post(url+procedure, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// clientFrom returns a client of srv for p whose connections come from
// the loopback address ip (127.0.0.2: another client than 127.0.0.1).
func clientFrom(t *testing.T, srv *ringtest.Server, p ringcast.Protocol, ip string) (ringcastv1connect.EventServiceClient, *http.Client) {
	t.Helper()
	hc := srv.HTTPClient(p)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	hc.Transport.(*http.Transport).DialContext = d.DialContext
	return ringcast.NewClient(srv.URL, ringcast.WithProtocol(p), ringcast.WithHTTPClient(hc)).RPC(), hc
}

// TestPublishBytesAreBoundedPerClient: past its bucket of bytes, a
// client's Publish and PublishBatch are refused with resource_exhausted
// and a Retry-After (HTTP 429 on Connect unary) on every protocol, however
// few commits it sends, and nothing is appended.
func TestPublishBytesAreBoundedPerClient(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Edge.PublishByteRate = 1 // no refill to speak of within the test
		cfg.Edge.PublishByteBurst = 2500
		srv := ringtest.Start(t, cfg)
		c, hc := clientFrom(t, srv, p, "127.0.0.1")
		ctx := context.Background()
		kb := func() *ringcastv1.PublishRequest {
			return &ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Payload: &ringcastv1.Fact_BinaryData{BinaryData: bytes.Repeat([]byte{7}, 1000)}}}}
		}
		for i := range 2 {
			if _, err := c.Publish(ctx, connect.NewRequest(kb())); err != nil {
				t.Fatalf("kilobyte %d of a bucket of 2500 bytes: %v", i, err)
			}
		}
		_, before := srv.Hub().Bounds()
		_, err := c.Publish(ctx, connect.NewRequest(kb()))
		checkRetryAfter(t, err, 1000)
		if !strings.Contains(err.Error(), "publish-byte-rate") {
			t.Fatalf("refusal %q does not name publish-byte-rate", err)
		}
		_, err = c.PublishBatch(ctx, connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: []*ringcastv1.PublishRequest{kb()}}))
		checkRetryAfter(t, err, 1000)
		if p == ringcast.ProtocolConnect {
			status, after, body := postConnect(t, hc, srv.URL, ringcastv1connect.EventServicePublishProcedure,
				`{"facts":[{"topic":"a/b","type":"t","binaryData":"`+strings.Repeat("AAAA", 300)+`"}]}`)
			if status != http.StatusTooManyRequests || after == "" || !strings.Contains(body, "publish-byte-rate") {
				t.Fatalf("Connect unary past the byte bucket: %d Retry-After %q %s, want 429 with Retry-After", status, after, body)
			}
		}
		if _, head := srv.Hub().Bounds(); head != before {
			t.Fatalf("refused publishes appended: head %d -> %d", before, head)
		}
		want := "2"
		if p == ringcast.ProtocolConnect {
			want = "3" // and the plain HTTP request
		}
		if m := ringtest.Scrape(t, srv.URL); !strings.Contains(m, `ringcast_limit_rejections_total{limit="publish_byte_rate"} `+want+"\n") {
			t.Fatalf("byte-rate refusals not counted as %s by their limit name", want)
		}
	})
}
