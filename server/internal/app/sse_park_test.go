package app_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestParkedSSEStreamsDrainOverTLSAndH2: with --sse-park, an SSE stream
// over TLS on HTTP/1.1 parks (its connection taken over from the HTTP
// server) and one over HTTP/2 waits on its goroutine; at shutdown both get
// the DRAINING status and an end, and Serve returns once the parked one
// has ended, although the HTTP server no longer sees it.
func TestParkedSSEStreamsDrainOverTLSAndH2(t *testing.T) {
	certFile, keyFile, pool := ringtest.SelfSigned(t)
	cfg := ringtest.Config()
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	cfg.ParkSSE = true
	cfg.ShutdownGrace = 10 * time.Second
	_, addr, cancel, done := ringtest.ServeLoopback(t, cfg)
	defer cancel()

	h1 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer h1.CloseIdleConnections()
	defer h2.CloseIdleConnections()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard only
	defer stop()
	var lines []<-chan string
	for _, tr := range []*http.Transport{h1, h2} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/events", nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /events: %s", resp.Status)
		}
		ch := make(chan string, 1024)
		go func() {
			defer close(ch)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				ch <- sc.Text()
			}
		}()
		waitLine(t, ch, "event: caught-up")
		lines = append(lines, ch)
	}
	ringtest.WaitStreamGoroutines(t, 1) // the HTTP/2 stream's

	cancel()
	for i, ch := range lines {
		waitLine(t, ch, `"state":"SERVER_STATE_DRAINING"`)
		for range ch { // to the end of the response
		}
		t.Logf("stream %d ended after DRAINING", i)
	}
	if err := ringtest.Wait(t, done, cfg.ShutdownGrace+5*time.Second, "TLS server shutdown"); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// waitLine reads ch until a line containing want.
func waitLine(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	for {
		line, ok := <-ch
		if !ok {
			t.Fatalf("response ended before %q", want)
		}
		if strings.Contains(line, want) {
			return
		}
	}
}

// TestShutdownWaitsForStuckStreams: Serve does not return while a stream
// is still writing, parked or not, on either face: here its client stopped
// reading, so the stream is stuck in a write until the grace period ends
// and its connection is closed. A parked stream is one the HTTP server no
// longer sees; one on its handler's goroutine is one the HTTP server's
// Close does not wait for.
func TestShutdownWaitsForStuckStreams(t *testing.T) {
	for _, tc := range []struct {
		name string
		park bool
		open func(t *testing.T, s *app.Server, addr string)
	}{
		{"sse parked", true, func(t *testing.T, s *app.Server, addr string) {
			ringtest.OpenStuckSSE(t, addr)
			ringtest.WaitParked(t, s.Hub, 1)
		}},
		{"sse on its goroutine", false, func(t *testing.T, s *app.Server, addr string) {
			ringtest.OpenStuckSSE(t, addr)
			ringtest.WaitStreamGoroutines(t, 1)
		}},
		{"connect", false, func(t *testing.T, s *app.Server, addr string) {
			c, _ := subscribeRaw(t, addr) // read up to its first message, then no more
			t.Cleanup(func() { c.Close() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.ParkSSE = tc.park
			cfg.Window = 4096
			cfg.WriteTimeout = time.Hour // only the end of the grace period ends the stream
			cfg.ShutdownGrace = time.Second
			s, addr, cancel, done := ringtest.ServeLoopback(t, cfg)
			defer cancel()

			tc.open(t, s, addr)
			for range 400 { // 24 MiB, more than the client's and server's buffers hold
				if _, err := s.Hub.Publish([]*ringcastv1.Fact{ringtest.BigFact()}, ""); err != nil {
					t.Fatal(err)
				}
			}

			cancel()
			if err := ringtest.Wait(t, done, time.Minute, "shutdown"); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			// Serve returned once the stream had ended (its connection
			// closed at the end of the grace period), not when the HTTP
			// server had no more requests.
			if n := s.Hub.Subscribers(); n != 0 {
				t.Fatalf("Serve returned with %d streams still open", n)
			}
		})
	}
}
