package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/bind"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// natsServer starts a nats-server with JetStream on a loopback port: one
// of its own (port -1), or port, where a server ran before, waiting while
// it is still in use; edit changes its options (nil: none).
func natsServer(t *testing.T, dir string, port int, edit func(*server.Options)) *server.Server {
	t.Helper()
	var ns *server.Server
	if err := bind.Again(t, fmt.Sprintf("start nats-server on port %d", port), func() (err error) {
		opts := &server.Options{ServerName: "solo", Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true}
		if edit != nil {
			edit(opts)
		}
		ns, err = natslog.StartServer(opts)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// serveOnNATS serves ringcast with the JetStream store on ns.
func serveOnNATS(t *testing.T, ns *server.Server) (addr string, nc *nats.Conn) {
	t.Helper()
	nc, err := natslog.Connect([]string{ns.ClientURL()}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cfg := ringtest.Config()
	// No byte or age bound: the stream is bounded only by what each case
	// gives JetStream (a byte bound is set aside from its storage when the
	// stream is created).
	cfg.Store = app.Store{Kind: app.StoreJetStream, NATSConn: nc, NATSMaxBytes: -1, NATSMaxAge: -1}
	_, addr, cancel, done := ringtest.ServeLoopback(t, cfg)
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return addr, nc
}

// wantReadiness waits until /readyz answers code with a body starting with
// prefix, then checks gRPC health over every protocol.
func wantReadiness(t *testing.T, addr string, code int, prefix string, st grpchealth.Status) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		c, body, err := probe(t, addr, "/readyz")
		if err == nil && c == code && strings.HasPrefix(body, prefix) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q %v; want %d %q…", c, body, err, code, prefix)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range ringtest.Protocols {
		for _, svc := range []string{"", ringcastv1connect.EventServiceName} {
			if got := healthStatus(t, addr, p, svc); got != st {
				t.Errorf("health %q over %s: %v, want %v", svc, p, got, st)
			}
		}
	}
}

// watchHealth opens a health Watch of the server on every protocol, each
// on its own client, for as long as ctx lasts.
func watchHealth(t *testing.T, ctx context.Context, addr string) map[ringcast.Protocol]<-chan grpchealth.WatchEvent {
	t.Helper()
	watches := map[ringcast.Protocol]<-chan grpchealth.WatchEvent{}
	for _, p := range ringtest.Protocols {
		hc := ringcast.NewHTTPClient(p)
		t.Cleanup(hc.CloseIdleConnections)
		watches[p] = grpchealth.NewClient(hc, "http://"+addr, ringtest.ClientOptions(p)...).Watch(ctx, &grpchealth.CheckRequest{})
	}
	return watches
}

// publishOne publishes one commit over p and returns its error.
func publishOne(t *testing.T, addr string, p ringcast.Protocol, i int) error {
	t.Helper()
	hc := ringcast.NewHTTPClient(p)
	defer hc.CloseIdleConnections()
	c := ringcast.NewClient("http://"+addr, ringcast.WithHTTPClient(hc), ringcast.WithProtocol(p))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.Publish(ctx, []*ringcastv1.Fact{{Topic: "t", Type: "readiness.test", Key: fmt.Sprint(i)}}, "")
	return err
}

// wantStoreError checks that a publish's error is unavailable and names
// the store's condition, not the NATS client.
func wantStoreError(t *testing.T, err error, cond string) {
	t.Helper()
	if connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), cond) || strings.Contains(err.Error(), "nats:") {
		t.Errorf("publish: %v; want unavailable naming %q and not the NATS client", err, cond)
	}
}

// fillUntilFull publishes over Connect until the store refuses a commit as
// full (at most most commits), then checks that readiness says so.
func fillUntilFull(t *testing.T, addr string, most int) {
	t.Helper()
	var refused error
	for i := 0; refused == nil; i++ {
		if i > most {
			t.Fatalf("the store took %d commits and is not full", most)
		}
		refused = publishOne(t, addr, ringcast.ProtocolConnect, i)
	}
	wantStoreError(t, refused, "store full: ")
	wantReadiness(t, addr, http.StatusServiceUnavailable, "store full: ", grpchealth.StatusNotServing)
}

// TestReadinessFollowsTheStore: readiness (/readyz and gRPC health on all
// three protocols) is off while the JetStream store is unavailable or full
// and on again when it recovers; a publish refused meanwhile names the
// condition.
func TestReadinessFollowsTheStore(t *testing.T) {
	t.Run("nats-server stopped and restarted", func(t *testing.T) {
		dir := t.TempDir()
		ns := natsServer(t, dir, -1, nil)
		port := ns.Addr().(*net.TCPAddr).Port
		addr, _ := serveOnNATS(t, ns)
		wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)
		if err := publishOne(t, addr, ringcast.ProtocolConnect, 0); err != nil {
			t.Fatal(err)
		}
		// Health watchers are told of the outage and of its end, and stay.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		watches := watchHealth(t, ctx, addr)
		nextStatus := func(p ringcast.Protocol, want grpchealth.Status) {
			t.Helper()
			ev := ringtest.Wait(t, watches[p], 60*time.Second, "a health status over "+string(p))
			if ev.Err != nil || ev.Response == nil || ev.Response.Status != want {
				t.Fatalf("health Watch over %s: %+v, want %v", p, ev, want)
			}
		}
		for _, p := range ringtest.Protocols {
			nextStatus(p, grpchealth.StatusServing)
		}

		ns.Shutdown()
		ns.WaitForShutdown()
		wantReadiness(t, addr, http.StatusServiceUnavailable, "store unavailable: ", grpchealth.StatusNotServing)
		for _, p := range ringtest.Protocols {
			nextStatus(p, grpchealth.StatusNotServing)
			wantStoreError(t, publishOne(t, addr, p, 1), "store unavailable: ")
		}

		natsServer(t, dir, port, nil)
		wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)
		for _, p := range ringtest.Protocols {
			nextStatus(p, grpchealth.StatusServing)
		}
		cancel()
		for _, p := range ringtest.Protocols {
			for range watches[p] {
			}
		}
	})

	t.Run("stream full with discard new", func(t *testing.T) {
		ns := natsServer(t, t.TempDir(), -1, nil)
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cfg := jetstream.StreamConfig{Name: natslog.DefaultStream, Subjects: []string{natslog.Subject(natslog.DefaultStream)},
			Storage: jetstream.FileStorage, Discard: jetstream.DiscardNew, MaxBytes: 4096, Duplicates: 10 * time.Minute}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		addr, _ := serveOnNATS(t, ns)
		wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)
		fillUntilFull(t, addr, 1000)

		cfg.MaxBytes = 1 << 20
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)
		for _, p := range ringtest.Protocols {
			if err := publishOne(t, addr, p, 2000); err != nil {
				t.Errorf("publish over %s after the stream grew: %v", p, err)
			}
		}
	})

	t.Run("JetStream storage exhausted", func(t *testing.T) {
		ns := natsServer(t, t.TempDir(), -1, func(o *server.Options) { o.JetStreamMaxStore = 64 << 10 })
		// Another stream takes part of the storage, and deleting it makes
		// room later: the commit stream itself is never cut under the
		// server, which would be damage (docs/reliability.md).
		bc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		bjs, _ := jetstream.New(bc)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := bjs.CreateStream(ctx, jetstream.StreamConfig{Name: "ballast", Subjects: []string{"ballast"}, Storage: jetstream.FileStorage}); err != nil {
			t.Fatal(err)
		}
		for range 24 {
			if _, err := bjs.Publish(ctx, "ballast", make([]byte, 1024)); err != nil {
				t.Fatal(err)
			}
		}
		addr, _ := serveOnNATS(t, ns)
		wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)
		fillUntilFull(t, addr, 10000)
		for _, p := range ringtest.Protocols {
			wantStoreError(t, publishOne(t, addr, p, -1), "store full: ")
		}

		if err := bjs.DeleteStream(ctx, "ballast"); err != nil {
			t.Fatal(err)
		}
		wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)
		for _, p := range ringtest.Protocols {
			if err := publishOne(t, addr, p, -2); err != nil {
				t.Errorf("publish over %s after room was made: %v", p, err)
			}
		}
	})
}

// TestAWatchToldOfAnOutageNeverHoldsShutdown: a health Watch stream that was
// already sent NOT_SERVING for a store outage is sent nothing new when the
// server drains (the status did not change), and still ends with an OK
// status at once on every protocol: Serve returns without the grace period
// (an hour: a hang shows) running out and closing streams.
func TestAWatchToldOfAnOutageNeverHoldsShutdown(t *testing.T) {
	ns := natsServer(t, t.TempDir(), -1, nil)
	nc, err := natslog.Connect([]string{ns.ClientURL()}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var log logbuf.Buffer
	cfg := ringtest.Config()
	cfg.Store = app.Store{Kind: app.StoreJetStream, NATSConn: nc}
	cfg.ShutdownGrace = time.Hour
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	_, addr, cancel, done := ringtest.ServeLoopback(t, cfg)
	defer cancel()
	wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)

	ns.Shutdown()
	ns.WaitForShutdown()
	wantReadiness(t, addr, http.StatusServiceUnavailable, "store unavailable: ", grpchealth.StatusNotServing)
	ctx, cancelWatch := context.WithCancel(context.Background())
	defer cancelWatch()
	watches := watchHealth(t, ctx, addr)
	for _, p := range ringtest.Protocols {
		ev := ringtest.Wait(t, watches[p], 60*time.Second, "a health status over "+string(p))
		if ev.Err != nil || ev.Response == nil || ev.Response.Status != grpchealth.StatusNotServing {
			t.Fatalf("health Watch over %s during the outage: %+v, want NOT_SERVING", p, ev)
		}
	}

	cancel() // SIGTERM
	for _, p := range ringtest.Protocols {
		for open := true; open; {
			select {
			case ev, ok := <-watches[p]:
				if open = ok; ok && (ev.Err != nil || ev.Response.Status != grpchealth.StatusNotServing) {
					t.Errorf("health Watch over %s on shutdown: %+v, want at most NOT_SERVING and an OK end", p, ev)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("the health Watch over %s did not end on shutdown", p)
			}
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Serve did not return: a health Watch holds shutdown")
	}
	if strings.Contains(log.String(), "streams still open") {
		t.Fatalf("shutdown closed streams still open:\n%s", log.String())
	}
}

// TestLostBookkeepingIsNotReady: the bookkeeping bucket deleted under a
// serving server: /readyz answers 503 saying why (naming the bucket) and
// gRPC health NOT_SERVING on every protocol; a publish is refused
// unavailable with a message naming neither the bucket nor the stream,
// and no commit reaches the stream.
func TestLostBookkeepingIsNotReady(t *testing.T) {
	ns := natsServer(t, t.TempDir(), -1, nil)
	addr, nc := serveOnNATS(t, ns)
	wantReadiness(t, addr, http.StatusOK, "ok", grpchealth.StatusServing)
	if err := publishOne(t, addr, ringtest.Protocols[0], 1); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := js.DeleteKeyValue(ctx, natslog.MetaBucket); err != nil {
		t.Fatal(err)
	}
	wantReadiness(t, addr, http.StatusServiceUnavailable, "store unavailable: the bookkeeping of JetStream stream \"ringcast\" (key ringcast of the key-value bucket "+natslog.MetaBucket+") is missing", grpchealth.StatusNotServing)
	for _, p := range ringtest.Protocols {
		c := ringtest.ClientOptions(p)
		hc := ringcast.NewHTTPClient(p)
		client := ringcastv1connect.NewEventServiceClient(hc, "http://"+addr, c...)
		_, err := client.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "t", Type: "readiness.test"}}}))
		hc.CloseIdleConnections()
		if connect.CodeOf(err) != connect.CodeUnavailable || strings.Contains(err.Error(), natslog.MetaBucket) || strings.Contains(err.Error(), `"ringcast"`) {
			t.Errorf("publish over %s with the bookkeeping lost: %v; want unavailable, naming neither the bucket nor the stream", p, err)
		}
	}
	st, err := js.Stream(ctx, natslog.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 1 {
		t.Errorf("the stream's last seq is %d, want 1: commits were stored without their mark", info.State.LastSeq)
	}
}
