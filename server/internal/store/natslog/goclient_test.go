package natslog_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// connectTo opens one more connection to ns (another replica's), closed
// when the test ends.
func connectTo(t testing.TB, ns *server.Server) *nats.Conn {
	t.Helper()
	nc, err := natslog.ConnectEmbedded(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// replicaServer starts a ringcast server as a replica on ns's stream, on a
// connection of its own; window 0 keeps ringtest's default.
func replicaServer(t testing.TB, ns *server.Server, window int) *ringtest.Server {
	t.Helper()
	cfg := ringtest.Config()
	if window > 0 {
		cfg.Window = window
	}
	cfg.Store = app.Store{Kind: app.StoreJetStream, NATSConn: connectTo(t, ns)}
	return ringtest.Start(t, cfg)
}

// TestGoClientCursorMovesBetweenReplicas: the Go client reads to head on
// replica A (each stream starting with A's unpositioned ServerStatus, which
// moves no cursor), then resumes with its cursor on replica B: only the
// newer facts, no resync.
func TestGoClientCursorMovesBetweenReplicas(t *testing.T) {
	ns, _ := embedded(t, t.TempDir())
	a, b := replicaServer(t, ns, 4), replicaServer(t, ns, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ca, cb := ringcast.NewClient(a.URL), ringcast.NewClient(b.URL)
	defer ca.CloseIdleConnections()
	defer cb.CloseIdleConnections()
	for i := range 6 {
		if _, err := ca.Publish(ctx, []*ringcastv1.Fact{fact("g/a", "k", i)}, ""); err != nil {
			t.Fatal(err)
		}
	}
	read := func(c *ringcast.Client, opts ...ringcast.SubscribeOption) (facts []uint64, cur ringcast.Cursor) {
		t.Helper()
		sub := c.Subscribe(append(opts, ringcast.WithEndAtHead())...)
		for it, err := range sub.Items(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			switch it.Kind {
			case ringcast.KindFact:
				facts = append(facts, it.Seq)
			case ringcast.KindResynced:
				t.Fatalf("resynced: %+v", it.Resync)
			}
		}
		return facts, sub.Cursor()
	}
	facts, cur := read(ca)
	if !equal(facts, seqRange(3, 6)) || cur.Seq != 6 {
		t.Fatalf("on A: facts of %v, cursor %+v; want the ring's 3..6 and cursor 6", facts, cur)
	}
	for i := range 3 {
		if _, err := cb.Publish(ctx, []*ringcastv1.Fact{fact("g/a", "k", 6+i)}, ""); err != nil {
			t.Fatal(err)
		}
	}
	facts, cur = read(cb, ringcast.WithCursor(cur))
	if !equal(facts, seqRange(7, 9)) || cur.Seq != 9 {
		t.Fatalf("on B with A's cursor: facts of %v, cursor %+v; want 7..9 and cursor 9", facts, cur)
	}
}
