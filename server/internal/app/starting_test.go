package app_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestAliveWhileTheStoreIsRead: Run listens at once and, while the store
// is being read (held here by a hook once it is open, before the hub reads
// it), answers as a server starting: /healthz 200, /readyz 503, gRPC health NOT_SERVING on
// every protocol, every RPC unavailable with Retry-After on every protocol
// (a publish, a subscribe), GET /events a 200 stream that ends at once
// with a retry hint (and Retry-After). Once the store is
// read the same listener serves: ready, SERVING, a publish stored.
func TestAliveWhileTheStoreIsRead(t *testing.T) {
	onMemoryAndEmbedded(t, testAliveWhileTheStoreIsRead)
}

func testAliveWhileTheStoreIsRead(t *testing.T, st ringtest.Store) {
	release := make(chan struct{})
	app.SetStoreOpened(func() { <-release })
	t.Cleanup(func() { app.SetStoreOpened(nil) })
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	cfg := st.Config(t, ringtest.Config())
	m := runLogged(t, cfg, regexp.MustCompile(`msg="ringcast listening[^"]*" addr=(\S+)`))
	addr := m[1]

	if c, body, err := probe(t, addr, "/healthz"); err != nil || c != http.StatusOK {
		t.Fatalf("/healthz while the store is read: %d %q %v; want 200", c, body, err)
	}
	if c, body, err := probe(t, addr, "/readyz"); err != nil || c != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while the store is read: %d %q %v; want 503", c, body, err)
	}
	for _, p := range ringtest.Protocols {
		for _, svc := range []string{"", ringcastv1connect.EventServiceName} {
			if got := healthStatus(t, addr, p, svc); got != grpchealth.StatusNotServing {
				t.Errorf("health %q over %s while the store is read: %v, want NOT_SERVING", svc, p, got)
			}
		}
		hc := ringcast.NewHTTPClient(p)
		client := ringcastv1connect.NewEventServiceClient(hc, "http://"+addr, ringtest.ClientOptions(p)...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := client.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "t", Type: "starting.test"}}}))
		wantStarting(t, p, "Publish", err)
		stream, err := client.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
		if err == nil {
			for stream.Receive() {
				t.Errorf("SubscribeEvents over %s while the store is read received %v", p, stream.Msg())
			}
			err = stream.Err()
			if stream.ResponseTrailer().Get("Retry-After") == "" && stream.ResponseHeader().Get("Retry-After") == "" {
				t.Errorf("SubscribeEvents over %s: no Retry-After", p)
			}
		}
		if connect.CodeOf(err) != connect.CodeUnavailable {
			t.Errorf("SubscribeEvents over %s while the store is read: %v; want unavailable", p, err)
		}
		cancel()
		hc.CloseIdleConnections()
	}
	// GET /events: EventSource gives up for good on any status but 200,
	// so the answer is a stream that ends at once with a retry hint.
	res, err := http.Get("http://" + addr + "/events?topic=t")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body) // the stream ends
	_ = res.Body.Close()
	if err != nil {
		t.Fatalf("/events while the store is read: %v", err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") || res.Header.Get("Retry-After") == "" {
		t.Errorf("/events while the store is read: %d %q, Retry-After %q; want 200 text/event-stream with Retry-After",
			res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Retry-After"))
	}
	if !regexp.MustCompile(`^retry: [0-9]+\n\n: starting: .*\n\n$`).Match(body) {
		t.Errorf("/events while the store is read: body %q; want a retry hint and the reason as a comment, and no event", body)
	}

	close(release)
	released = true
	wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)
	for _, p := range ringtest.Protocols {
		if err := publishOne(t, addr, p, 1); err != nil {
			t.Errorf("publish over %s once the store is read: %v", p, err)
		}
	}
}

// wantStarting checks a unary call's refusal while starting: unavailable,
// with Retry-After.
func wantStarting(t *testing.T, p ringcast.Protocol, what string, err error) {
	t.Helper()
	ce, ok := err.(*connect.Error)
	if !ok || ce.Code() != connect.CodeUnavailable {
		t.Errorf("%s over %s while the store is read: %v; want unavailable", what, p, err)
		return
	}
	if ce.Meta().Get("Retry-After") == "" {
		t.Errorf("%s over %s while the store is read: no Retry-After in %v", what, p, ce.Meta())
	}
}
