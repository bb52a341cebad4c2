package natslog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestKeysAreDeduplicatedByJetStreamAcrossReplicas: two replicas on one
// stream answer a key alike, whichever published it: a key published on A
// and retried on B (or on A) is a duplicate with the original seq and
// time, as JetStream's PubAck says; so is a key of a batch published on B
// retried alone on A. A duplicate whose original the stream's limits
// discarded still gets the original seq.
func TestKeysAreDeduplicatedByJetStreamAcrossReplicas(t *testing.T) {
	ns, nc := embedded(t, t.TempDir())
	nc2 := connectTo(t, ns)
	la := openLog(t, nc, natslog.Options{MaxMsgs: 5})
	lb := openLog(t, nc2, natslog.Options{})
	a, b := newHub(t, la, 4), newHub(t, lb, 4)
	first := publish(t, a, "k1", fact("t", "", 1))
	for _, h := range []*hub.Hub{b, a} {
		r := publish(t, h, "k1", fact("t", "", 1))
		if !r.Duplicate || r.Seq != first.Seq || !r.Time.Equal(first.Time) || r.Epoch != first.Epoch {
			t.Fatalf("retry = %+v, want the original %+v as a duplicate", r, first)
		}
	}
	rs := publishBatch(t, b, commit("", 3), commit("k2", 4))
	r := publish(t, a, "k2", fact("t", "", 4))
	if !r.Duplicate || r.Seq != rs[1].Seq || !r.Time.Equal(rs[1].Time) {
		t.Fatalf("retry on A of a key of B's batch = %+v, want the original %+v", r, rs[1])
	}
	for i := range 5 {
		publish(t, b, "", fact("t", "", 10+i))
	}
	if r := publish(t, b, "k1", fact("t", "", 1)); !r.Duplicate || r.Seq != first.Seq {
		t.Fatalf("retry after the original was discarded = %+v, want a duplicate of seq %d", r, first.Seq)
	}
}

// TestConcurrentBatchesWithTheSameKeysAppendEachOnce: two replicas publish
// batches with the same keys at once, again and again: each key is
// appended once, and both replicas answer it with the same seq.
func TestConcurrentBatchesWithTheSameKeysAppendEachOnce(t *testing.T) {
	ns, nc := embedded(t, t.TempDir())
	nc2 := connectTo(t, ns)
	la := openLog(t, nc, natslog.Options{})
	lb := openLog(t, nc2, natslog.Options{})
	a, b := newHub(t, la, 64), newHub(t, lb, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seqOf := map[string]uint64{}
	for round := range 10 {
		keys := []string{fmt.Sprintf("r%d-a", round), fmt.Sprintf("r%d-b", round), fmt.Sprintf("r%d-c", round)}
		var batches [2][]hub.Commit
		for i, k := range keys {
			batches[0] = append(batches[0], commit(k, i))
			batches[1] = append(batches[1], commit(keys[len(keys)-1-i], len(keys)-1-i)) // the other order, the same commits
		}
		var rs [2][]hub.Receipt
		var errs [2]error
		var wg sync.WaitGroup
		for i, h := range []*hub.Hub{a, b} {
			wg.Go(func() { rs[i], errs[i] = h.PublishBatch(ctx, batches[i]) })
		}
		wg.Wait()
		for i := range 2 {
			if errs[i] != nil {
				if !errors.Is(errs[i], hub.ErrUnavailable) {
					t.Fatal(errs[i])
				}
				// A key staged by the other batch at that instant: retry.
				if rs[i], errs[i] = []*hub.Hub{a, b}[i].PublishBatch(ctx, batches[i]); errs[i] != nil {
					t.Fatal(errs[i])
				}
			}
			for j, c := range batches[i] {
				if s, ok := seqOf[c.IdempotencyKey]; ok && s != rs[i][j].Seq {
					t.Fatalf("key %s: seq %d on one replica, %d on the other", c.IdempotencyKey, s, rs[i][j].Seq)
				}
				seqOf[c.IdempotencyKey] = rs[i][j].Seq
			}
		}
	}
	if last := lastSeq(t, la); last != uint64(len(seqOf)) {
		t.Fatalf("%d commits appended for %d keys", last, len(seqOf))
	}
}

// TestServerStatusReportsTheStreamsDuplicateWindow: the dedupe window a
// replica reports is the stream's, which deduplicates, not its own setting.
func TestServerStatusReportsTheStreamsDuplicateWindow(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	openLog(t, nc, natslog.Options{Duplicates: time.Minute})
	h, err := hub.New(hub.Config{Log: openLog(t, nc, natslog.Options{Duplicates: time.Hour}), DedupeWindow: 2 * time.Hour, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	if w := h.Status().GetLimits().GetDedupeWindow().AsDuration(); w != time.Minute {
		t.Fatalf("dedupe window %v, want the stream's 1m", w)
	}
}
