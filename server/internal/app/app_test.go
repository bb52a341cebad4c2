package app_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"go.uber.org/goleak"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestGetServerStatusByHTTPGet(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	q := url.Values{"encoding": {"json"}, "message": {"{}"}}
	res, err := http.Get(srv.URL + ringcastv1connect.EventServiceGetServerStatusProcedure + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"window":64`) || !strings.Contains(string(body), `"state":"SERVER_STATE_SERVING"`) {
		t.Fatalf("GET status: %d %s", res.StatusCode, body)
	}
}

func TestHealthAndReflectionAreServed(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			hc := srv.HTTPClient(p)
			health := grpchealth.NewClient(hc, srv.URL, ringtest.ClientOptions(p)...)
			res, err := health.Check(context.Background(), &grpchealth.CheckRequest{Service: ringcastv1connect.EventServiceName})
			if err != nil || res.Status != grpchealth.StatusServing {
				t.Fatalf("health check: %v %v", res, err)
			}
		})
	}
	refl := grpcreflect.NewClient(srv.HTTPClient(ringcast.ProtocolGRPC), srv.URL, connect.WithGRPC())
	stream := refl.NewStream(context.Background())
	defer stream.Close()
	names, err := stream.ListServices()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range names {
		found = found || string(n) == ringcastv1connect.EventServiceName
	}
	if !found {
		t.Fatalf("reflection lists %v, without %s", names, ringcastv1connect.EventServiceName)
	}
}

// TestTLSServesAllProtocols: with a certificate the same port speaks TLS,
// HTTP/2 via ALPN for gRPC and HTTP/1.1 for the others.
func TestTLSServesAllProtocols(t *testing.T) {
	certFile, keyFile, pool := ringtest.SelfSigned(t)
	cfg := ringtest.Config()
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	s, addr, cancel, done := ringtest.ServeLoopback(t, cfg)
	base := "https://" + addr
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			hc := ringcast.NewHTTPClient(p)
			hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}
			defer hc.CloseIdleConnections()
			c := ringcast.NewClient(base, ringcast.WithProtocol(p), ringcast.WithHTTPClient(hc))
			st, err := c.Status(context.Background())
			if err != nil || st.Status.GetInstanceEpoch() != s.Hub.Epoch() {
				t.Fatalf("status over TLS: %v %v", st, err)
			}
			stream, err := c.RPC().SubscribeEvents(context.Background(), connect.NewRequest(&ringcastv1.SubscribeEventsRequest{EndAtHead: true}))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for stream.Receive() {
				n++
			}
			if err := stream.Err(); err != nil || n != 2 { // the bind status and CaughtUp
				t.Fatalf("stream over TLS: %d messages, %v", n, err)
			}
			stream.Close()
		})
	}
	t.Run("sse over h2", func(t *testing.T) {
		// HTTP/2 has no chunked encoding, and its server drops the
		// Transfer-Encoding the face sets for HTTP/1.1.
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(base + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
			t.Fatalf("/events over TLS: %s %s, want 200 over HTTP/2", resp.Proto, resp.Status)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && sc.Text() != "event: caught-up" {
		}
		if sc.Err() != nil || sc.Text() != "event: caught-up" {
			t.Fatalf("no caught-up frame over HTTP/2: %v", sc.Err())
		}
	})
	cancel()
	ringtest.Wait(t, done, 10*time.Second, "TLS server shutdown")
}

func TestConfigValidationNamesEveryProblem(t *testing.T) {
	cfg := app.Defaults()
	cfg.Window = -1
	cfg.WriteTimeout = time.Millisecond
	cfg.TLSCert = "cert.pem"
	cfg.Edge.PublishRate = math.NaN()
	cfg.ShutdownGrace, cfg.ShutdownDelay = -time.Second, -time.Second
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"window", "write-timeout", "tls-cert and tls-key", "publish-rate must be a finite number", "shutdown-grace must be between 10ms and 1h (or 0: the default), not -1s", "shutdown-delay must be between 0s and 1h, not -1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := app.New(cfg); err == nil {
		t.Fatal("app.New accepted an invalid config")
	}
	cfg = ringtest.Config()
	cfg.TLSCert, cfg.TLSKey = "missing-cert.pem", "missing-key.pem"
	if _, err := app.New(cfg); err == nil || !strings.Contains(err.Error(), "load TLS certificate") {
		t.Fatalf("app.New with missing certificate files: %v, want a load error before anything starts", err)
	}
}

// TestZeroConfigServes: every zero field takes its default (applied in one
// place), so a zero Config — no logger included — builds, serves and shuts
// down.
func TestZeroConfigServes(t *testing.T) {
	s, err := app.New(app.Config{})
	if err != nil {
		t.Fatalf("app.New(Config{}): %v", err)
	}
	want := app.Defaults()
	if st := s.Hub.Status(); int(st.GetWindow()) != want.Window || st.GetLimits().GetHeartbeatInterval().AsDuration() != want.Heartbeat ||
		int(st.GetLimits().GetMaxRequestBytes()) != want.MaxRequestBytes || st.GetServerVersion() != want.Version {
		t.Fatalf("zero config status %v, want the defaults", st)
	}
	s.Hub.Close()
	if want.Coalesce != time.Millisecond || want.Demo || want.Addr != "127.0.0.1:8080" || want.Window != 1024 {
		t.Fatalf("Defaults() = %+v, not the documented defaults", want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := app.Run(ctx, app.Config{Addr: "127.0.0.1:0"}); err != nil {
		t.Fatalf("app.Run with a zero config: %v", err)
	}
}
