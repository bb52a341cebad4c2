package natslog_test

import (
	"net"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/bind"
)

// TestStartServerReportsAFailedStartAtOnce: a nats-server whose client or
// route port is taken is not started, and the error says the address is
// in use (rather than that the server was not ready after the wait); on
// a port of its own it starts.
func TestStartServerReportsAFailedStartAtOnce(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	for name, opts := range map[string]*server.Options{
		"client port": {Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true},
		"route port": {Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "c", Host: "127.0.0.1", Port: port}},
	} {
		ns, err := natslog.StartServer(opts)
		if err == nil {
			ns.Shutdown()
			t.Fatalf("%s in use: nats-server started", name)
		}
		if !bind.InUse(err) {
			t.Fatalf("%s in use: %v; want an address in use", name, err)
		}
	}
	ns, err := natslog.StartServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Shutdown()
	ns.WaitForShutdown()
}
