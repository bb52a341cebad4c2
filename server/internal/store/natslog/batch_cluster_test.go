package natslog_test

import (
	"context"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestPublishBatchOnAnR3Stream: on a stream replicated on three
// nats-servers, a batch through replica A gets consecutive seqs; retried
// through replica B (connected to another server) its keys are duplicates
// with the original receipts, and a batch mixing a repeated key, a key deep
// in the window and new keys appends the new ones only, in order. A key
// whose original the stream's limits discarded is a duplicate in a batch
// too, with its original seq.
func TestPublishBatchOnAnR3Stream(t *testing.T) {
	servers, _ := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn := func(i int, opts natslog.Options) *natslog.Log { return openOn(ctx, t, servers[i], opts) }
	// Nothing here waits for a timeout: a generous one keeps a busy
	// machine's slow replication (600 messages, three replicas) from
	// failing the test.
	r3 := natslog.Options{Replicas: 3, Timeout: 30 * time.Second}
	la, lb := conn(0, r3), conn(1, r3)
	a, b := newHub(t, la, 16), newHub(t, lb, 16)
	first := publishBatch(t, a, commit("k1", 1), commit("", 2), commit("k3", 3))
	for i, r := range first {
		if r.Seq != first[0].Seq+uint64(i) || r.Duplicate {
			t.Fatalf("receipts %+v, want consecutive new seqs", first)
		}
	}
	var batch []hub.Commit
	for i := range 600 {
		batch = append(batch, commit("", i))
	}
	publishBatch(t, b, batch...)
	again := publishBatch(t, b, commit("k3", 3), commit("new1", 4), commit("k1", 1), commit("new2", 5))
	head := first[2].Seq + 600
	if !again[0].Duplicate || again[0].Seq != first[2].Seq || !again[0].Time.Equal(first[2].Time) ||
		again[1].Duplicate || again[1].Seq != head+1 ||
		!again[2].Duplicate || again[2].Seq != first[0].Seq ||
		again[3].Duplicate || again[3].Seq != head+2 {
		t.Fatalf("retry on B: %+v; want duplicates of %d and %d, new %d and %d", again, first[2].Seq, first[0].Seq, head+1, head+2)
	}
	if n := lastSeq(t, la); n != head+2 {
		t.Fatalf("last seq %d, want %d", n, head+2)
	}
	bounded := r3
	bounded.Stream, bounded.MaxMsgs = "bounded", 4
	c := newHub(t, conn(2, bounded), 16)
	k := publish(t, c, "k", fact("t", "", 0))
	for i := range 4 {
		publish(t, c, "", fact("t", "", i+1))
	}
	if rs := publishBatch(t, c, commit("new", 1), commit("k", 2)); rs[0].Duplicate || rs[0].Seq != 6 || !rs[1].Duplicate || rs[1].Seq != k.Seq {
		t.Fatalf("batch repeating a discarded key: %+v, want seq 6 and a duplicate of %d", rs, k.Seq)
	}
}
