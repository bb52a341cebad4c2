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
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestHealthWatchAndReflectionTakeStreamSlots: gRPC health Watch streams
// (Connect, gRPC, gRPC-Web) and reflection streams take their client's
// stream slots like SubscribeEvents: with the slots full, one more Watch,
// reflection stream or SubscribeEvents is resource_exhausted; a freed slot
// serves a reflection stream, which then holds it. Watch and reflection
// streams outlive --read-timeout: a reflection stream answers a request
// sent after it, and the Watch streams are told NOT_SERVING at shutdown.
func TestHealthWatchAndReflectionTakeStreamSlots(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.MaxStreamsPerClient = 3
	// Long enough that a client on a busy machine sends its request body
	// within it: the read timeout holds for every request.
	cfg.Edge.ReadTimeout = time.Second
	srv := ringtest.Start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	watch := func(ctx context.Context, p ringcast.Protocol) <-chan grpchealth.WatchEvent {
		return healthClient(srv, p).Watch(ctx, &grpchealth.CheckRequest{})
	}
	var held []<-chan grpchealth.WatchEvent
	var cancelFirst context.CancelFunc
	for i, p := range ringtest.Protocols {
		wctx := ctx
		if i == 0 {
			wctx, cancelFirst = context.WithCancel(ctx)
		}
		w := watch(wctx, p)
		if ev := ringtest.Wait(t, w, 10*time.Second, "the first health status over "+string(p)); ev.Err != nil || ev.Response.Status != grpchealth.StatusServing {
			t.Fatalf("Watch over %s: %+v, want SERVING", p, ev)
		}
		if i > 0 {
			held = append(held, w)
		}
	}
	time.Sleep(cfg.Edge.ReadTimeout * 3 / 2) // past the requests' read deadlines, set before their first answers

	for _, p := range ringtest.Protocols {
		ev := ringtest.Wait(t, watch(ctx, p), 10*time.Second, "a refused Watch over "+string(p))
		if connect.CodeOf(ev.Err) != connect.CodeResourceExhausted {
			t.Errorf("a fourth Watch over %s: %+v, want resource_exhausted", p, ev)
		}
		s, err := srv.Client(p).SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
		if err == nil {
			if !s.Receive() { // a stream served sends its first message
				err = s.Err()
			}
			s.Close()
		}
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Errorf("SubscribeEvents over %s with the slots held by Watch streams: %v, want resource_exhausted", p, err)
		}
	}
	reflect := func() (*grpcreflect.ClientStream, error) {
		rs := grpcreflect.NewClient(srv.HTTPClient(ringcast.ProtocolGRPC), srv.URL, connect.WithGRPC()).NewStream(ctx)
		_, err := rs.ListServices()
		return rs, err
	}
	if rs, err := reflect(); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("a reflection stream with the slots full: %v, want resource_exhausted", err)
		_, _ = rs.Close()
	}

	cancelFirst() // frees a slot
	var rs *grpcreflect.ClientStream
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if rs, err = reflect(); err == nil {
			break
		}
		_, _ = rs.Close()
		if connect.CodeOf(err) != connect.CodeResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("a reflection stream after a Watch ended: %v", err)
		}
	}
	time.Sleep(cfg.Edge.ReadTimeout * 3 / 2) // past the reflection request's read deadline, set before its answer
	if _, err := rs.ListServices(); err != nil {
		t.Errorf("a reflection stream's second request, past the read timeout: %v", err)
	}
	if ev := ringtest.Wait(t, watch(ctx, ringcast.ProtocolGRPC), 10*time.Second, "a refused Watch"); connect.CodeOf(ev.Err) != connect.CodeResourceExhausted {
		t.Errorf("a Watch with a reflection stream holding the freed slot: %+v, want resource_exhausted", ev)
	}
	_, _ = rs.Close()

	go srv.Stop()
	for _, w := range held {
		ev := ringtest.Wait(t, w, 30*time.Second, "NOT_SERVING on shutdown")
		if ev.Err != nil || ev.Response.Status != grpchealth.StatusNotServing {
			t.Errorf("a Watch held past the read timeout, at shutdown: %+v, want NOT_SERVING", ev)
		}
	}
}

// openWatch opens a gRPC health Watch over Connect on a raw HTTP/1.1
// connection from local (nil: any) and reads its response head; it
// returns false if the connection was turned away instead.
func openWatch(t *testing.T, addr string, local net.Addr) (net.Conn, bool) {
	t.Helper()
	c, refusal := openWatchRefusal(t, addr, local)
	return c, refusal == ""
}

// openWatchRefusal is openWatch, returning the body of the 429 that
// turned the connection away ("": the Watch is open).
func openWatchRefusal(t *testing.T, addr string, local net.Addr) (net.Conn, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: local}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_, _ = io.WriteString(c, "POST /grpc.health.v1.Health/Watch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/connect+proto\r\nContent-Length: 5\r\n\r\n\x00\x00\x00\x00\x00")
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("Watch: no answer: %v", err)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("a turned-away connection's reason: %v", err)
		}
		if resp.Header.Get("Retry-After") == "" || len(b) == 0 {
			t.Fatalf("a turned-away connection: Retry-After %q, reason %q", resp.Header.Get("Retry-After"), b)
		}
		return c, string(b)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Watch: %d", resp.StatusCode)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, ""
}

// TestConnectionsPerClientAreBounded: one client (one IP) holding a Watch
// stream on each of its connections gets at most a quarter of --max-conns
// (the default share): its next connection is turned away at once with a
// 429 naming --max-conns-per-client and how to lift it, and counted,
// while another client (another loopback address) is still served.
func TestConnectionsPerClientAreBounded(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.MaxConns = 16
	cfg.Edge.MaxConnsPerClient = 0 // the default: a quarter of max-conns
	srv := ringtest.Start(t, cfg)
	for i := range 4 {
		if _, ok := openWatch(t, srv.Addr, nil); !ok {
			t.Fatalf("connection %d of the client's 4 was closed", i+1)
		}
	}
	for i := range 12 {
		_, refusal := openWatchRefusal(t, srv.Addr, nil)
		if refusal == "" {
			t.Fatalf("connection %d of one client was served past its share of 4", 5+i)
		}
		if !strings.Contains(refusal, "--max-conns-per-client") || !strings.Contains(refusal, "-1 for no bound") {
			t.Fatalf("connection %d turned away saying %q: not naming --max-conns-per-client and how to lift it", 5+i, refusal)
		}
	}
	other := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
	c, ok := openWatch(t, srv.Addr, other)
	if !ok {
		t.Fatal("another client was refused while the first held its share")
	}
	_ = c.Close()
	d := net.Dialer{LocalAddr: other}
	m, err := d.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := scrape2(t, m); !strings.Contains(got, `ringcast_limit_rejections_total{limit="conns_per_client"} 12`) {
		t.Fatalf("refused connections not counted:\n%s", grepLines(got, "ringcast_limit_rejections_total"))
	}
}
