package natslog_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
)

// TestCleanCloseIsNotALostConnection: closing the connection, as ringcast
// does when it stops, logs no WARN (the close at Debug), while a server
// that goes away is logged at WARN as a lost connection.
func TestCleanCloseIsNotALostConnection(t *testing.T) {
	start := func() *server.Server {
		ns, err := natslog.StartServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		return ns
	}
	var logs logbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	ns := start()
	nc, err := natslog.Connect([]string{ns.ClientURL()}, "", logger)
	if err != nil {
		t.Fatal(err)
	}
	// The client runs its callbacks in order on one goroutine: once the
	// closed handler has run, so has the disconnect handler.
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	nc.Close()
	<-closed
	if out := logs.String(); strings.Contains(out, "level=WARN") || !strings.Contains(out, `level=DEBUG msg="NATS connection closed"`) {
		t.Fatalf("a clean close logged:\n%s", out)
	}

	ns2 := start()
	nc2, err := natslog.Connect([]string{ns2.ClientURL()}, "", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	ns2.Shutdown()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `level=WARN msg="NATS connection lost"`); {
		if time.Now().After(deadline) {
			t.Fatalf("a server gone logged no lost connection:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
