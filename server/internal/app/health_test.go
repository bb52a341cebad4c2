package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func healthClient(srv *ringtest.Server, p ringcast.Protocol) *grpchealth.Client {
	return grpchealth.NewClient(srv.HTTPClient(p), srv.URL, ringtest.ClientOptions(p)...)
}

func TestProbesWhileServing(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/readyz": http.StatusOK} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want || string(body) != "ok\n" {
			t.Errorf("GET %s: %d %q, want %d ok", path, res.StatusCode, body, want)
		}
	}
}

// TestShutdownTellsHealthWatchersAndEndsThem: on shutdown every open
// grpc.health.v1.Health/Watch stream (all three protocols, the server and
// the event service) receives NOT_SERVING and then ends with an OK status,
// a subscriber still gets ServerStatus(DRAINING) and an OK end, and Serve
// returns without the (one minute) grace period running out: nothing is
// left holding it.
func TestShutdownTellsHealthWatchersAndEndsThem(t *testing.T) {
	cfg := ringtest.Config()
	cfg.ShutdownGrace = time.Minute
	var log logbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	srv := ringtest.Start(t, cfg)

	type watched struct {
		name   string
		events <-chan grpchealth.WatchEvent
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var watches []watched
	for _, p := range ringtest.Protocols {
		hc := healthClient(srv, p)
		for _, svc := range []string{"", ringcastv1connect.EventServiceName} {
			w := watched{name: string(p) + " " + svc, events: hc.Watch(ctx, &grpchealth.CheckRequest{Service: svc})}
			ev := ringtest.Wait(t, w.events, 10*time.Second, "the first health status of "+w.name)
			if ev.Err != nil || ev.Response == nil || ev.Response.Status != grpchealth.StatusServing {
				t.Fatalf("%s: first event %+v, want SERVING", w.name, ev)
			}
			watches = append(watches, w)
		}
	}
	c := ringcast.NewClient(srv.URL, ringcast.WithHTTPClient(srv.HTTPClient(ringcast.ProtocolGRPC)), ringcast.WithProtocol(ringcast.ProtocolGRPC))
	stream, err := c.RPC().SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() {
		t.Fatalf("subscribe: %v", stream.Err())
	}

	stopped := make(chan struct{})
	go func() { srv.Stop(); close(stopped) }()

	for _, w := range watches {
		var got []string
		for ev := range w.events {
			switch {
			case ev.Err != nil:
				t.Errorf("%s: stream ended with %v after %v, want NOT_SERVING and an OK end", w.name, ev.Err, got)
			default:
				got = append(got, ev.Response.Status.String())
			}
		}
		if len(got) != 1 || got[0] != "not_serving" {
			t.Errorf("%s: got %v after shutdown began, want [not_serving] then the end", w.name, got)
		}
	}
	var last *ringcastv1.SubscribeEventsResponse
	for stream.Receive() {
		last = stream.Msg()
	}
	if err := stream.Err(); err != nil || last.GetServerStatus().GetState() != ringcastv1.ServerState_SERVER_STATE_DRAINING {
		t.Errorf("subscriber: last message %v, end %v; want ServerStatus(DRAINING) and an OK end", last, err)
	}
	// Had a watcher held shutdown, the grace period would have run out
	// (and the watcher's stream been cut, not ended OK, above).
	ringtest.Wait(t, stopped, cfg.ShutdownGrace+time.Minute, "Serve to return") // a hang guard only
	if strings.Contains(log.String(), "after the shutdown grace period") {
		t.Errorf("the shutdown grace period ran out; log:\n%s", log.String())
	}
}
