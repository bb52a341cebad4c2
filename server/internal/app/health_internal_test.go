package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

// TestDrainingIsReportedEverywhere: once draining, gRPC health Check says
// NOT_SERVING (server and event service, all three protocols), a new Watch
// gets NOT_SERVING and ends OK, /readyz is 503 and /healthz stays 200.
func TestDrainingIsReportedEverywhere(t *testing.T) {
	cfg := Defaults()
	cfg.Demo = false
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Hub.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: s.Handler, Protocols: &protocols}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	base := "http://" + ln.Addr().String()

	s.health.drain()

	for path, want := range map[string]int{"/healthz": http.StatusOK, "/readyz": http.StatusServiceUnavailable} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s while draining: %d %q, want %d", path, res.StatusCode, body, want)
		}
	}
	for _, p := range []ringcast.Protocol{ringcast.ProtocolConnect, ringcast.ProtocolGRPC, ringcast.ProtocolGRPCWeb} {
		var opts []connect.ClientOption
		switch p {
		case ringcast.ProtocolGRPC:
			opts = append(opts, connect.WithGRPC())
		case ringcast.ProtocolGRPCWeb:
			opts = append(opts, connect.WithGRPCWeb())
		}
		hc := ringcast.NewHTTPClient(p)
		defer hc.CloseIdleConnections()
		c := grpchealth.NewClient(hc, base, opts...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang guard
		defer cancel()
		for _, svc := range []string{"", ringcastv1connect.EventServiceName} {
			res, err := c.Check(ctx, &grpchealth.CheckRequest{Service: svc})
			if err != nil || res.Status != grpchealth.StatusNotServing {
				t.Errorf("%s Check(%q) while draining: %+v %v, want NOT_SERVING", p, svc, res, err)
			}
			var got []string
			for ev := range c.Watch(ctx, &grpchealth.CheckRequest{Service: svc}) {
				if ev.Err != nil {
					t.Errorf("%s Watch(%q) while draining ended with %v", p, svc, ev.Err)
					continue
				}
				got = append(got, ev.Response.Status.String())
			}
			if len(got) != 1 || got[0] != "not_serving" {
				t.Errorf("%s Watch(%q) while draining: %v, want [not_serving] then an OK end", p, svc, got)
			}
		}
	}
}
