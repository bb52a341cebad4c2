package goclient_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestSnapshotEvictedKeysSurfaceInCaughtUp: a LATEST_PER_KEY snapshot taken
// after the server's key table evicted keys says so in its KindCaughtUp
// item, on all three protocols; a complete one says 0.
func TestSnapshotEvictedKeysSurfaceInCaughtUp(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.StateKeys = 2
			srv := ringtest.Start(t, cfg)
			c := newClient(t, srv.URL, p)
			caughtUp := func() (keys []string, evicted uint64) {
				for _, it := range readAll(t, c.Subscribe(ringcast.WithSnapshot(ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY), ringcast.WithEndAtHead())) {
					switch it.Kind {
					case ringcast.KindFact:
						keys = append(keys, it.Fact.GetKey())
					case ringcast.KindCaughtUp:
						evicted = it.SnapshotEvictedKeys
					}
				}
				return keys, evicted
			}
			pub := func(keys ...string) {
				var facts []*ringcastv1.Fact
				for _, k := range keys {
					d, _ := structpb.NewStruct(map[string]any{"k": k})
					facts = append(facts, &ringcastv1.Fact{Topic: "a", Type: "t", Key: k, Payload: &ringcastv1.Fact_Data{Data: d}})
				}
				if _, err := srv.Hub().Publish(facts, ""); err != nil {
					t.Fatal(err)
				}
			}
			pub("k1", "k2")
			if keys, evicted := caughtUp(); len(keys) != 2 || evicted != 0 {
				t.Fatalf("complete snapshot: keys %v, evicted %d; want 2 keys and 0", keys, evicted)
			}
			pub("k3")
			if keys, evicted := caughtUp(); len(keys) != 2 || keys[1] != "k3" || evicted != 1 {
				t.Fatalf("after an eviction: keys %v, evicted %d; want [k2 k3] and 1", keys, evicted)
			}
		})
	}
}

// TestCommitWaitsTheRetryAfterOfAResourceExhaustedRefusal: a commit refused
// by the server's per-client publish rate is retried no sooner than the
// server's Retry-After (1 s here), even with a 1 ms backoff, and then
// succeeds; hammering at the backoff's pace would have spent both attempts
// inside the empty bucket.
func TestCommitWaitsTheRetryAfterOfAResourceExhaustedRefusal(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.PublishRate = 1
	cfg.Edge.PublishBurst = 1
	srv := ringtest.Start(t, cfg)
	c := newClient(t, srv.URL, ringcast.ProtocolConnect, ringcast.WithBackoff(ringcast.Backoff{Min: time.Millisecond, Initial: time.Millisecond, Max: time.Millisecond}))
	d, _ := structpb.NewStruct(map[string]any{"n": 1})
	facts := func() []*ringcastv1.Fact {
		return []*ringcastv1.Fact{{Topic: "a", Type: "t", Payload: &ringcastv1.Fact_Data{Data: d}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := c.Commit(ctx, facts()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Commit(ctx, facts(), ringcast.WithAttempts(2)); err != nil {
		t.Fatalf("second commit: %v, want it to succeed after waiting out Retry-After", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("retried after %v, sooner than the server's Retry-After of 1s", waited)
	}
}
