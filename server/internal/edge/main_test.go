package edge_test

import (
	"net"
	"testing"

	"connectrpc.com/grpchealth"
	"go.uber.org/goleak"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// The edge's tests serve a whole server (testkit/ringtest) and speak to it
// as clients do: HTTP/1.1, h2c, TLS and raw frames.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func healthClient(srv *ringtest.Server, p ringcast.Protocol) *grpchealth.Client {
	return grpchealth.NewClient(srv.HTTPClient(p), srv.URL, ringtest.ClientOptions(p)...)
}
