package natslog_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/bind"
)

// TestNATSLostWhileRunning: with NATS gone, a publish fails with
// ErrUnavailable (retryable) and an open stream keeps what it has; when
// NATS returns on the same store, publishing resumes and the stream
// continues exactly — no gap, no duplicate.
func TestNATSLostWhileRunning(t *testing.T) {
	dir := t.TempDir()
	port := -1 // its own, then the same on the restart: the client reconnects to it
	opts := func() *server.Options {
		return &server.Options{ServerName: "solo", Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true}
	}
	ns, err := natslog.StartServer(opts())
	if err != nil {
		t.Fatal(err)
	}
	port = ns.Addr().(*net.TCPAddr).Port
	nc, err := natslog.Connect([]string{ns.ClientURL()}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := natslog.Open(ctx, nc, natslog.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := newHub(t, l, 8)
	for i := range 3 {
		publish(t, h, "", fact("t", "", i))
	}
	rec := &syncRecorder{}
	done := make(chan error, 1)
	go func() { done <- h.Subscribe(ctx, hub.Request{SinceSeq: 1, Epoch: l.Epoch(), UntilSeq: 6}, rec) }()

	ns.Shutdown()
	ns.WaitForShutdown()
	if _, err := h.Publish([]*ringcastv1.Fact{fact("t", "", 3)}, "during"); !errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("publish with NATS down: %v, want ErrUnavailable", err)
	}

	if err := bind.Again(t, "restart nats-server", func() (err error) {
		ns, err = natslog.StartServer(opts())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	var seqs []uint64
	for i := 3; i < 6; i++ {
		var r hub.Receipt
		for attempt := 0; ; attempt++ {
			r, err = h.Publish([]*ringcastv1.Fact{fact("t", "", i)}, fmt.Sprintf("after-%d", i))
			if err == nil {
				break
			}
			if attempt > 100 {
				t.Fatalf("publish after NATS returned: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		seqs = append(seqs, r.Seq)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, m := range rec.all() {
		if m.GetCommit() != nil {
			got = append(got, m.Seq)
		}
	}
	if !equal(got, seqRange(2, 6)) || !equal(seqs, seqRange(4, 6)) {
		t.Fatalf("stream across the outage: commits %v (want 2..6); receipts after it %v (want 4..6)", got, seqs)
	}
}
