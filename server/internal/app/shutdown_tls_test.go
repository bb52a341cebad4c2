package app_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestShutdownDrainsGRPCOverTLS: over TLS, with the rapid-reset guard on
// (the default), a gRPC stream open at shutdown gets ServerStatus(DRAINING)
// and an OK end. Its connection, handed to the HTTP/2 server once ALPN
// chose h2, must count as in use: closed with the ones that never sent a
// request, the stream would be cut before the server's GOAWAY.
func TestShutdownDrainsGRPCOverTLS(t *testing.T) {
	certFile, keyFile, pool := ringtest.SelfSigned(t)
	cfg := ringtest.Config()
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	cfg.ShutdownGrace = 10 * time.Second
	_, addr, cancel, done := ringtest.ServeLoopback(t, cfg)
	defer cancel()

	hc := ringcast.NewHTTPClient(ringcast.ProtocolGRPC)
	hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}
	defer hc.CloseIdleConnections()
	c := ringcast.NewClient("https://"+addr, ringcast.WithProtocol(ringcast.ProtocolGRPC), ringcast.WithHTTPClient(hc))
	streamCtx, stopStream := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard only
	defer stopStream()
	stream, err := c.RPC().SubscribeEvents(streamCtx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() {
		t.Fatalf("subscribe over TLS: %v", stream.Err())
	}

	cancel()
	var last *ringcastv1.SubscribeEventsResponse
	for stream.Receive() {
		last = stream.Msg()
	}
	if err := stream.Err(); err != nil || last.GetServerStatus().GetState() != ringcastv1.ServerState_SERVER_STATE_DRAINING {
		t.Fatalf("gRPC stream over TLS: last message %v, end %v; want ServerStatus(DRAINING) and an OK end", last, err)
	}
	if err := ringtest.Wait(t, done, cfg.ShutdownGrace+5*time.Second, "TLS server shutdown"); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
