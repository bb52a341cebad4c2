package edge_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// openSSE opens GET /events and returns the response (body open).
func openSSE(t *testing.T, hc *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := hc.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestStreamsPerClientAreBoundedOnEveryFace: one client (one IP) holding
// its maximum of streams — SSE over HTTP/1.1, Connect over HTTP/1.1 and
// gRPC over h2c together — is refused one more on each face: 429 with
// Retry-After on SSE, resource_exhausted on Connect and gRPC. Closing one
// frees a slot. Refusals are counted by limit.
func TestStreamsPerClientAreBoundedOnEveryFace(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.MaxStreamsPerClient = 3
	srv := ringtest.Start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sse := openSSE(t, srv.HTTPClient(ringcast.ProtocolConnect), srv.URL)
	if sse.StatusCode != http.StatusOK {
		t.Fatalf("first SSE stream: %d", sse.StatusCode)
	}
	var open []*connect.ServerStreamForClient[ringcastv1.SubscribeEventsResponse]
	for _, p := range []ringcast.Protocol{ringcast.ProtocolConnect, ringcast.ProtocolGRPC} {
		s, err := srv.Client(p).SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
		if err != nil || !s.Receive() {
			t.Fatalf("%s stream: %v %v", p, err, s.Err())
		}
		open = append(open, s)
	}

	refused := openSSE(t, srv.HTTPClient(ringcast.ProtocolConnect), srv.URL)
	body, _ := io.ReadAll(refused.Body)
	refused.Body.Close()
	if refused.StatusCode != http.StatusTooManyRequests || refused.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "max-streams-per-client") {
		t.Fatalf("fourth stream over SSE: %d Retry-After %q %q, want 429 with Retry-After", refused.StatusCode, refused.Header.Get("Retry-After"), body)
	}
	for _, p := range ringtest.Protocols {
		s, err := srv.Client(p).SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
		if err == nil {
			for s.Receive() {
			}
			err = s.Err()
			s.Close()
		}
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("fourth stream over %s: %v, want resource_exhausted", p, err)
		}
	}
	if m := ringtest.Scrape(t, srv.URL); !strings.Contains(m, `ringcast_limit_rejections_total{limit="streams_per_client"} 4`) {
		t.Fatalf("rejections not counted:\n%s", grepLines(m, "ringcast_limit_rejections_total"))
	}

	sse.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		again := openSSE(t, srv.HTTPClient(ringcast.ProtocolConnect), srv.URL)
		again.Body.Close()
		if again.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("closing a stream did not free its slot")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range open {
		s.Close()
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPublishRateIsBoundedPerClient: past its burst, a client's publishes
// are refused with resource_exhausted — HTTP 429 with Retry-After on
// Connect unary — on every protocol, and nothing is appended.
func TestPublishRateIsBoundedPerClient(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.PublishRate = 0.001 // no refill within the test
	cfg.Edge.PublishBurst = 3
	srv := ringtest.Start(t, cfg)
	d, _ := structpb.NewStruct(map[string]any{"n": 1})
	req := func() *connect.Request[ringcastv1.PublishRequest] {
		return connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "a", Type: "t", Payload: &ringcastv1.Fact_Data{Data: d}}}})
	}
	for i, p := range ringtest.Protocols {
		if _, err := srv.Client(p).Publish(context.Background(), req()); err != nil {
			t.Fatalf("publish %d within the burst: %v", i, err)
		}
	}
	_, before := srv.Hub().Bounds()
	for _, p := range ringtest.Protocols {
		_, err := srv.Client(p).Publish(context.Background(), req())
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("%s: publish past the burst: %v, want resource_exhausted", p, err)
		}
	}
	resp, err := http.Post(srv.URL+"/ringcast.v1.EventService/Publish", "application/json",
		strings.NewReader(`{"facts":[{"topic":"a","type":"t","data":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "resource_exhausted") {
		t.Fatalf("Connect unary past the burst: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if _, head := srv.Hub().Bounds(); head != before {
		t.Fatalf("refused publishes appended: head %d -> %d", before, head)
	}
}

// TestConnectionsAreBounded: past --max-conns, a new connection is turned
// away at once, with a 429 naming --max-conns and the open-file limit,
// while those held keep being served.
func TestConnectionsAreBounded(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.MaxConns = 16
	srv := ringtest.Start(t, cfg)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 16 {
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard only
	br := bufio.NewReader(extra)
	refused, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("connection 17: %v, want a 429", err)
	}
	reason, _ := io.ReadAll(refused.Body)
	if refused.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(reason), "--max-conns") || !strings.Contains(string(reason), "ulimit -n") {
		t.Fatalf("connection 17: %d %q, want 429 naming --max-conns and the open-file limit", refused.StatusCode, reason)
	}
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("connection 17 was not closed after its refusal: %v", err)
	}
	// A held connection still gets an answer.
	if _, err := io.WriteString(held[0], "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = held[0].SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(held[0]), nil)
	if err != nil {
		t.Fatalf("held connection: %v", err)
	}
	resp.Body.Close()
	if m := scrape2(t, held[1]); !strings.Contains(m, `ringcast_limit_rejections_total{limit="conns"} 1`) {
		t.Fatalf("refused connection not counted:\n%s", grepLines(m, "ringcast_limit_rejections_total"))
	}
}

// scrape2 reads /metrics over an already open connection.
func scrape2(t *testing.T, c net.Conn) string {
	t.Helper()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestIdleConnectionsAreClosed: a keep-alive HTTP/1.1 connection after its
// request, and an h2c connection that sent only its preface, are closed
// after --idle-timeout (the read deadlines are only hang guards).
func TestIdleConnectionsAreClosed(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.IdleTimeout = time.Second
	srv := ringtest.Start(t, cfg)

	h1, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	if _, err := io.WriteString(h1, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = h1.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(h1)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("idle keep-alive connection: %v, want it closed", err)
	}

	h2, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if _, err := io.WriteString(h2, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = h2.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, h2); err != nil {
		t.Fatalf("preface-only h2c connection: %v, want it closed", err)
	}
}

// TestTrickledBodyIsCut: a Publish body sent slower than --read-timeout
// allows fails instead of holding its connection open.
func TestTrickledBodyIsCut(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.ReadTimeout = 200 * time.Millisecond
	srv := ringtest.Start(t, cfg)
	c, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /ringcast.v1.EventService/Publish HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"facts\""); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := io.ReadAll(c) // the server answers (or not) and closes
	if isTimeout(err) {
		t.Fatalf("trickled body still open after the hang guard: %q", b)
	}
	if strings.Contains(string(b), "200 OK") {
		t.Fatalf("trickled body was accepted: %q", b)
	}
}

// TestStreamOutlivesReadTimeout: --read-timeout bounds reading a stream's
// request, not the stream: a stream still open well past it delivers the
// next commit, on all three protocols.
func TestStreamOutlivesReadTimeout(t *testing.T) {
	cfg := ringtest.Config()
	// Long enough that a client on a busy machine sends its request body
	// within it: the read timeout holds for every request.
	cfg.Edge.ReadTimeout = time.Second
	srv := ringtest.Start(t, cfg)
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			topic := "edge/read-timeout/" + string(p)
			stream, err := srv.Client(p).SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{Topics: []string{topic}}))
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			if !stream.Receive() { // the stream's first message: its request was read
				t.Fatalf("stream ended at once: %v", stream.Err())
			}
			time.Sleep(cfg.Edge.ReadTimeout * 3 / 2) // past the request's read deadline, set before its first message
			facts := []*ringcastv1.Fact{{Topic: topic, Type: "t", Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{}}}}
			if _, err := srv.Hub().Publish(facts, ""); err != nil {
				t.Fatal(err)
			}
			for stream.Receive() {
				if fs := stream.Msg().GetCommit().GetFacts(); len(fs) == 1 && fs[0].GetTopic() == topic {
					return
				}
			}
			t.Fatalf("stream ended before the commit published after the read timeout: %v", stream.Err())
		})
	}
}

// TestMalformedStreamRequestsAreInvalidArgument: a SubscribeEvents request
// that is truncated, empty or holds two messages is invalid_argument on
// Connect and gRPC-Web (connect-go alone answers internal and
// unimplemented).
func TestMalformedStreamRequestsAreInvalidArgument(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	env := func(msg string) string {
		n := len(msg)
		return string([]byte{0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}) + msg
	}
	one := env(`{"endAtHead":true}`)
	for _, ctype := range []string{"application/connect+json", "application/grpc-web+json"} {
		for name, body := range map[string]string{"truncated": one[:8], "empty": "", "two messages": one + one} {
			resp, err := http.Post(srv.URL+"/ringcast.v1.EventService/SubscribeEvents", ctype, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			status := resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")
			if !strings.Contains(string(b), `"code":"invalid_argument"`) && status != "3" && !strings.Contains(string(b), "grpc-status:3") {
				t.Errorf("%s, %s: %q (grpc-status %q), want invalid_argument", ctype, name, b, status)
			}
		}
	}
}

// TestPublishOutcomeTakesFromThePublishBucket: a GetPublishOutcome takes
// one token of its client's bucket of commits, as the Publish it stands
// in for would: past the burst it is refused with resource_exhausted on
// every protocol, and with HTTP 429 and Retry-After by GET.
func TestPublishOutcomeTakesFromThePublishBucket(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.PublishRate = 0.001 // no refill within the test
	cfg.Edge.PublishBurst = 3
	srv := ringtest.Start(t, cfg)
	req := func() *connect.Request[ringcastv1.GetPublishOutcomeRequest] {
		return connect.NewRequest(&ringcastv1.GetPublishOutcomeRequest{IdempotencyKey: "k"})
	}
	for i, p := range ringtest.Protocols {
		if _, err := srv.Client(p).GetPublishOutcome(context.Background(), req()); err != nil {
			t.Fatalf("outcome %d within the burst: %v", i, err)
		}
	}
	for _, p := range ringtest.Protocols {
		_, err := srv.Client(p).GetPublishOutcome(context.Background(), req())
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("%s: outcome past the burst: %v, want resource_exhausted", p, err)
		}
	}
	resp, err := http.Get(srv.URL + "/ringcast.v1.EventService/GetPublishOutcome?encoding=json&message=%7B%22idempotencyKey%22%3A%22k%22%7D")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("GET past the burst: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
