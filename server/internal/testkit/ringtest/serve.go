package ringtest

import (
	"context"
	"net"
	"testing"

	"github.com/ringcast/ringcast/server/internal/app"
)

// ServeLoopback runs app.New(cfg) (returned) on a loopback listener until cancel is
// called; done receives what Serve returned.
func ServeLoopback(t testing.TB, cfg app.Config) (s *app.Server, addr string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	s, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	return s, ln.Addr().String(), cancel, served
}
