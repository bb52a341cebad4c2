package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
)

// TestServeExitsNonZeroWhenItsStreamIsCreatedAgain: `ringcast serve
// --store jetstream` whose stream is deleted and created again while it
// runs drains and exits 1 with a log line saying to restart it, so an
// orchestrator restarts it on the new stream (and its new epoch).
func TestServeExitsNonZeroWhenItsStreamIsCreatedAgain(t *testing.T) {
	ns, err := natslog.StartServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	url := "nats://" + ns.Addr().String()
	var stderr logbuf.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- run([]string{"serve", "--addr", "127.0.0.1:0", "--demo=false", "--store", "jetstream", "--nats-url", url}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for !strings.Contains(stderr.String(), "ringcast serving") {
		select {
		case code := <-exit:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		case <-ctx.Done():
			t.Fatalf("serve did not start: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := js.DeleteStream(ctx, natslog.DefaultStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natslog.DefaultStream, Subjects: []string{natslog.Subject(natslog.DefaultStream)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 1 || !strings.Contains(stderr.String(), "restart it to take the log's new epoch") {
			t.Fatalf("serve exited %d: %s; want 1 and a line saying to restart it", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("serve still running after its stream was created again: %s", stderr.String())
	}
}
