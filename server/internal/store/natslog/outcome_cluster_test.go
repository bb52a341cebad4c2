package natslog_test

import (
	"context"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestPublishOutcomeOnAnR3Stream: on a stream replicated on three
// nats-servers (the question to JetStream's leader takes the Raft path,
// see keySeq), two replicas connected to different servers answer a
// key's outcome alike, whichever published it, at once: the original
// receipt (a batch's key too) with the commit's topics; an unknown key
// is not applied, remembered no later than now.
func TestPublishOutcomeOnAnR3Stream(t *testing.T) {
	servers, _ := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn := func(i int, opts natslog.Options) *natslog.Log { return openOn(ctx, t, servers[i], opts) }
	r3 := natslog.Options{Replicas: 3, Timeout: 30 * time.Second}
	a, b := newHub(t, conn(0, r3), 16), newHub(t, conn(1, r3), 16)
	ra := publish(t, a, "on-a", fact("g/a", "", 1), fact("g/b", "", 2))
	rb := publishBatch(t, b, commit("", 3), commit("on-b", 4))[1]
	for key, r := range map[string]hub.Receipt{"on-a": ra, "on-b": rb} {
		for _, h := range []*hub.Hub{b, a} {
			o, err := h.Outcome(ctx, hub.Key{Name: key})
			if err != nil || !o.Applied || o.Receipt.Seq != r.Seq || o.Receipt.Epoch != r.Epoch || !o.Receipt.Time.Equal(r.Time) || o.Receipt.Duplicate || len(o.Topics) == 0 {
				t.Fatalf("outcome of %s: %+v, %v, want applied with %+v", key, o, err, r)
			}
		}
	}
	for _, h := range []*hub.Hub{a, b} {
		before := time.Now()
		o, err := h.Outcome(ctx, hub.Key{Name: "unknown"})
		if err != nil || o.Applied || o.RememberedSince.After(time.Now()) || o.RememberedSince.Before(before.Add(-natslog.DefaultDuplicates)) {
			t.Fatalf("unknown key: %+v, %v", o, err)
		}
	}
}
