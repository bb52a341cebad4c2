package ringcast_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	ringcast "github.com/ringcast/ringcast/clients/go"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/ringtest"
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
