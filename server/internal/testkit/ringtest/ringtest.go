// Package ringtest runs real ringcast servers on loopback for tests: the
// production assembly (package app) behind a real listener, speaking
// HTTP/1.1 and h2c, so Connect, gRPC, gRPC-Web and SSE tests exercise the
// same code path as `ringcast serve`.
package ringtest

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/testkit/bind"
)

// Protocols are the three protocols every stream behaviour is proved on.
var Protocols = []ringcast.Protocol{ringcast.ProtocolConnect, ringcast.ProtocolGRPC, ringcast.ProtocolGRPCWeb}

// Config returns the test defaults: no demo feed, a small window, short
// timings, no lease, and no per-client stream, connection or publish-rate
// bound, of commits or of bytes (every
// test client is 127.0.0.1; the limits' own tests set them).
func Config() app.Config {
	cfg := app.Defaults()
	cfg.Addr = "127.0.0.1:0"
	cfg.Demo = false
	cfg.Window = 64
	cfg.Lease = -1
	cfg.ShutdownGrace = 2 * time.Second
	cfg.Edge.MaxStreamsPerClient = -1
	cfg.Edge.PublishRate = -1
	cfg.Edge.PublishByteRate = -1
	cfg.Edge.MaxConnsPerClient = -1
	return cfg
}

// Server is a running ringcast server.
type Server struct {
	URL  string
	Addr string

	t      testing.TB
	cfg    app.Config
	mu     sync.Mutex
	srv    *app.Server
	cancel context.CancelFunc
	done   chan error
	// stopped closes once Stop has stopped the running instance.
	stopped chan struct{}
	// clients made by HTTPClient, closed before the server stops
	clients []*http.Client
}

// Start serves cfg (Addr "127.0.0.1:0" picks a port) until the test ends.
func Start(t testing.TB, cfg app.Config) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &Server{t: t, cfg: cfg, Addr: ln.Addr().String()}
	s.URL = "http://" + s.Addr
	s.serve(ln)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) serve(ln net.Listener) {
	s.t.Helper()
	srv, err := app.New(s.cfg)
	if err != nil {
		ln.Close()
		s.t.Fatalf("app.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	s.mu.Lock()
	s.srv, s.cancel, s.done, s.stopped = srv, cancel, done, make(chan struct{})
	s.mu.Unlock()
}

// App is the running instance's assembled server.
func (s *Server) App() *app.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// Hub is the running instance's hub.
func (s *Server) Hub() *hub.Hub {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv.Hub
}

// Stop shuts the server down gracefully (DRAINING, streams end OK) and
// waits for it. Safe to call twice: a second call waits for the first.
func (s *Server) Stop() {
	s.mu.Lock()
	cancel, done, clients, stopped := s.cancel, s.done, s.clients, s.stopped
	s.cancel = nil
	s.mu.Unlock()
	if cancel == nil {
		if stopped != nil {
			<-stopped
		}
		return
	}
	defer close(stopped)
	s.closeIdle(clients)
	cancel()
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	if err := <-done; err != nil {
		s.t.Errorf("serve: %v", err)
	}
}

// closeIdle closes the clients' idle connections before the server's
// GOAWAY: an HTTP/2 client forgets a connection on GOAWAY without closing
// it, and shutdown then waits out HTTP/2's GOAWAY grace period (1 s). A
// stream a test cancelled ends on the server a moment later, and only
// then is its connection idle: wait a little for the hub to have no
// stream left (a test that stops with streams open waits that little).
// This only saves time; nothing depends on it.
func (s *Server) closeIdle(clients []*http.Client) {
	h := s.Hub()
	for i := 0; i < 50 && h.Subscribers() > 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range clients {
		c.CloseIdleConnections()
	}
}

// Restart stops the server and starts a new instance on the same address
// and store: on memory a new epoch with seq from 1, on a durable store the
// same log (its epoch and seqs). It waits while the address is still in
// use.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var ln net.Listener
	if err := bind.Again(s.t, "restart on "+s.Addr, func() (err error) {
		ln, err = net.Listen("tcp", s.Addr)
		return err
	}); err != nil {
		s.t.Fatalf("relisten on %s: %v", s.Addr, err)
	}
	s.serve(ln)
}

// Client returns a generated EventService client speaking p. Its idle
// connections are closed before the server stops, so shutdown does not wait
// out HTTP/2's GOAWAY grace period.
func (s *Server) Client(p ringcast.Protocol) ringcastv1connect.EventServiceClient {
	return ringcast.NewClient(s.URL, ringcast.WithProtocol(p), ringcast.WithHTTPClient(s.HTTPClient(p))).RPC()
}

// HTTPClient returns an HTTP client suited to p (see ringcast.NewHTTPClient)
// whose idle connections are closed before the server stops.
func (s *Server) HTTPClient(p ringcast.Protocol) *http.Client {
	hc := ringcast.NewHTTPClient(p)
	s.mu.Lock()
	s.clients = append(s.clients, hc)
	s.mu.Unlock()
	return hc
}

// ClientOptions are the connect client options that speak p.
func ClientOptions(p ringcast.Protocol) []connect.ClientOption {
	switch p {
	case ringcast.ProtocolGRPC:
		return []connect.ClientOption{connect.WithGRPC()}
	case ringcast.ProtocolGRPCWeb:
		return []connect.ClientOption{connect.WithGRPCWeb()}
	}
	return nil
}

// Scrape GETs base's /metrics and returns the exposition text.
func Scrape(t testing.TB, base string) string {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Wait receives from ch or fails the test after d.
func Wait[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
		var zero T
		return zero
	}
}

// StreamGoroutines counts the goroutines serving a hub stream (in its
// loop, waiting or writing): a parked stream has none.
func StreamGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "hub.(*stream).run(") + strings.Count(string(buf), "hub.(*stream).resume(")
}

// Outcome asks c for key's publish outcome (GetPublishOutcome), failing t
// on an error.
func Outcome(t testing.TB, c ringcastv1connect.EventServiceClient, key string) *ringcastv1.GetPublishOutcomeResponse {
	t.Helper()
	res, err := c.GetPublishOutcome(context.Background(), connect.NewRequest(&ringcastv1.GetPublishOutcomeRequest{IdempotencyKey: key}))
	if err != nil {
		t.Fatalf("outcome of %q: %v", key, err)
	}
	return res.Msg
}

// WaitParked waits until n of h's streams wait parked (hub.Hub.Parked).
func WaitParked(t testing.TB, h *hub.Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for h.Parked() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams parked, want %d", h.Parked(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitStreamGoroutines waits until StreamGoroutines is n.
func WaitStreamGoroutines(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for {
		got := StreamGoroutines()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines serve streams, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
