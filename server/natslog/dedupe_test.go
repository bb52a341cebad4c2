package natslog_test

import (
	"testing"

	"github.com/ringcast/ringcast/server/hub"
	"github.com/ringcast/ringcast/server/natslog"
)

// TestKeysAreDeduplicatedByJetStreamAcrossReplicas: two replicas on one
// stream answer a key alike, whichever published it: a key published on A
// and retried on B (or on A) is a duplicate with the original seq and
// time, as JetStream's PubAck says; so is a key of a batch published on B
// retried alone on A. A duplicate whose original the stream's limits
// discarded still gets the original seq.
func TestKeysAreDeduplicatedByJetStreamAcrossReplicas(t *testing.T) {
	ns, nc := embedded(t, t.TempDir())
	nc2, err := natslog.ConnectEmbedded(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc2.Close)
	la := openLog(t, nc, natslog.Options{MaxMsgs: 5})
	lb := openLog(t, nc2, natslog.Options{})
	a, b := newHub(t, la, 4), newHub(t, lb, 4)
	first := publish(t, a, "k1", fact("t", "", 1))
	for _, h := range []*hub.Hub{b, a} {
		r := publish(t, h, "k1", fact("t", "", 2))
		if !r.Duplicate || r.Seq != first.Seq || !r.Time.Equal(first.Time) || r.Epoch != first.Epoch {
			t.Fatalf("retry = %+v, want the original %+v as a duplicate", r, first)
		}
	}
	rs := publishBatch(t, b, commit("", 3), commit("k2", 4))
	r := publish(t, a, "k2", fact("t", "", 5))
	if !r.Duplicate || r.Seq != rs[1].Seq || !r.Time.Equal(rs[1].Time) {
		t.Fatalf("retry on A of a key of B's batch = %+v, want the original %+v", r, rs[1])
	}
	for i := range 5 {
		publish(t, b, "", fact("t", "", 10+i))
	}
	if r := publish(t, b, "k1", fact("t", "", 2)); !r.Duplicate || r.Seq != first.Seq {
		t.Fatalf("retry after the original was discarded = %+v, want a duplicate of seq %d", r, first.Seq)
	}
}
