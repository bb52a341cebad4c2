// Package goclient_test proves the Go client (clients/go/ringcast) against
// real ringcast servers started in-process on loopback (testkit/ringtest),
// on Connect, gRPC and gRPC-Web, and runs the client conformance vectors
// (clients/conformance) against a scripted server. It lives in the server's
// module so that the client's own module needs nothing of the server.
package goclient_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
