package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/grpchealth"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// probe GETs path on a new connection and returns the status and body.
func probe(t *testing.T, addr, path string) (int, string, error) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	res, err := hc.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, string(body), err
}

// healthStatus asks gRPC health for service over p, on a new connection.
func healthStatus(t *testing.T, addr string, p ringcast.Protocol, service string) grpchealth.Status {
	t.Helper()
	hc := ringcast.NewHTTPClient(p)
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := grpchealth.NewClient(hc, "http://"+addr, ringtest.ClientOptions(p)...).Check(ctx, &grpchealth.CheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health Check %q over %s: %v", service, p, err)
	}
	return res.Status
}

// waitProbe probes path on new connections until it answers want, and
// fails at once if the server refuses the connection.
func waitProbe(t *testing.T, addr, path string, want int) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, body, err := probe(t, addr, path)
		if errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("GET %s on a new connection: %v: the listener closed", path, err)
		}
		if err == nil && code == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %q %v, want %d", path, code, body, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShutdownDelayServesWhileNotReady: told to stop with a shutdown delay,
// the server at once reports not ready (/readyz 503, gRPC health
// NOT_SERVING on all three protocols) to new connections, while it goes on
// serving everything: /healthz 200, new streams, publishes reaching an open
// stream. When the delay ends it drains as without one: the stream gets
// ServerStatus(DRAINING) and an OK end, and Serve returns nil.
func TestShutdownDelayServesWhileNotReady(t *testing.T) {
	cfg := ringtest.Config()
	cfg.ShutdownDelay = time.Hour // ended by EndDelay, never by time
	endDelay := make(chan struct{})
	cfg.EndDelay = endDelay
	cfg.ShutdownGrace = 30 * time.Second
	_, addr, cancel, done := ringtest.ServeLoopback(t, cfg)
	defer cancel()
	if body := waitProbe(t, addr, "/readyz", http.StatusOK); body != "ok\n" {
		t.Fatalf("/readyz while serving: %q", body)
	}
	live, liveBody := subscribeRaw(t, addr)
	defer live.Close()

	cancel() // SIGTERM
	if body := waitProbe(t, addr, "/readyz", http.StatusServiceUnavailable); body != "draining\n" {
		t.Errorf("/readyz after the signal: %q, want draining", body)
	}
	if code, body, err := probe(t, addr, "/healthz"); err != nil || code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz during the shutdown delay: %d %q %v, want 200 ok", code, body, err)
	}
	for _, p := range ringtest.Protocols {
		for _, svc := range []string{"", ringcastv1connect.EventServiceName} {
			if st := healthStatus(t, addr, p, svc); st != grpchealth.StatusNotServing {
				t.Errorf("health %q over %s during the shutdown delay: %v, want NOT_SERVING", svc, p, st)
			}
		}
	}
	// Still served: a new stream, and a publish that reaches both streams.
	fresh, freshBody := subscribeRaw(t, addr)
	defer fresh.Close()
	hc := ringcast.NewHTTPClient(ringcast.ProtocolConnect)
	defer hc.CloseIdleConnections()
	c := ringcast.NewClient("http://"+addr, ringcast.WithHTTPClient(hc))
	ctx, cancelPub := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelPub()
	_, err := c.Publish(ctx, []*ringcastv1.Fact{{Topic: "t", Type: "drain.test", Key: "k"}}, "")
	if err != nil {
		t.Fatalf("publish during the shutdown delay: %v", err)
	}
	for name, body := range map[string]io.Reader{"open stream": liveBody, "new stream": freshBody} {
		for {
			f, err := readFrame(body)
			if err != nil || strings.HasPrefix(f, "end ") {
				t.Fatalf("%s during the shutdown delay: %q %v, want the commit", name, f, err)
			}
			if strings.Contains(f, `"commit"`) {
				break
			}
		}
	}

	close(endDelay)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(cfg.ShutdownGrace + 30*time.Second):
		t.Fatal("Serve did not return after the shutdown delay ended")
	}
	rest, err := readFrames(liveBody)
	if err != nil || len(rest) < 2 || !strings.Contains(rest[len(rest)-2], "SERVER_STATE_DRAINING") || rest[len(rest)-1] != "end {}" {
		t.Fatalf("open stream after the delay: %q %v, want ServerStatus(DRAINING) then an OK end", rest, err)
	}
	if _, _, err := probe(t, addr, "/healthz"); err == nil {
		t.Fatal("/healthz answered after Serve returned")
	}
}
