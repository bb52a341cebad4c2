package natslog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestOwnCommitsEnterFromTheirAcknowledgement: two replicas on one stream
// publish at once, 16 publishers each, single commits and batches, so that
// each replica takes its own commits from their acknowledgement out of
// order, between commits of the other it can only follow. A third replica
// publishes nothing and only follows. Every replica serves every commit
// once, in seq order, and the three serve the very same messages (seq,
// time, facts, traceparent, fingerprint): a commit taken from its
// acknowledgement is the commit Follow would have given. The receipts name
// exactly the commits served.
func TestOwnCommitsEnterFromTheirAcknowledgement(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	var hubs []*hub.Hub
	for range 3 {
		hubs = append(hubs, newHub(t, openLog(t, nc, natslog.Options{}), 4096))
	}
	const publishers, each = 16, 25
	var (
		mu       sync.Mutex
		receipts = map[uint64]string{} // seq -> what was published there
		wg       sync.WaitGroup
	)
	for r, h := range hubs[:2] {
		for p := range publishers {
			wg.Go(func() {
				rs, names := publishMixed(t, h, "own", fmt.Sprintf("r%d-p%d", r, p), each, 5, func(i int) string { return traceparent(r, p, i) })
				mu.Lock()
				defer mu.Unlock()
				for k, rc := range rs {
					if prev, ok := receipts[rc.Seq]; ok {
						t.Errorf("seq %d received by %s and %s", rc.Seq, prev, names[k])
					}
					receipts[rc.Seq] = names[k]
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	total := uint64(len(receipts))
	var views [][]*ringcastv1.SubscribeEventsResponse
	for i, h := range hubs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		// The follower may still be behind: read until it holds the last seq.
		for _, head := h.Bounds(); head < total && ctx.Err() == nil; _, head = h.Bounds() {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		commits, msgs := run(t, h, hub.Request{SinceSeq: 0, Epoch: h.Epoch(), EndAtHead: true})
		if !equal(commits, seqRange(1, total)) {
			t.Fatalf("replica %d served seqs %v, want 1..%d once each", i, commits, total)
		}
		var cs []*ringcastv1.SubscribeEventsResponse
		for _, m := range msgs {
			if c := m.GetCommit(); c != nil {
				if got, want := c.GetFacts()[0].GetKey(), receipts[m.Seq]; got != want {
					t.Fatalf("replica %d: seq %d holds %q, its receipt was for %q", i, m.Seq, got, want)
				}
				cs = append(cs, m)
			}
		}
		views = append(views, cs)
	}
	for i := 1; i < len(views); i++ {
		for k := range views[0] {
			if !proto.Equal(views[0][k], views[i][k]) {
				t.Fatalf("seq %d: replica 0 serves %v, replica %d %v", views[0][k].Seq, views[0][k], i, views[i][k])
			}
		}
	}
}

// publishMixed publishes each commits on topic through h, one at a time,
// keyed name-i: single commits, and every batchEvery-th a batch of two
// (name-ia, name-ib); the first commit of each carries tp(i). It returns
// the receipts and their commits' keys, failing the test on an error.
func publishMixed(t *testing.T, h *hub.Hub, topic, name string, each, batchEvery int, tp func(i int) string) (rs []hub.Receipt, keys []string) {
	for i := range each {
		key := fmt.Sprintf("%s-%d", name, i)
		if i%batchEvery == batchEvery-1 {
			b, err := h.PublishBatch(context.Background(), []hub.Commit{
				{Facts: []*ringcastv1.Fact{fact(topic, key+"a", i)}, Traceparent: tp(i)},
				{Facts: []*ringcastv1.Fact{fact(topic, key+"b", i)}},
			})
			if err != nil {
				t.Error(err)
				return rs, keys
			}
			rs, keys = append(rs, b...), append(keys, key+"a", key+"b")
			continue
		}
		rc, err := h.PublishCommit(context.Background(), hub.Commit{Facts: []*ringcastv1.Fact{fact(topic, key, i)}, Traceparent: tp(i)})
		if err != nil {
			t.Error(err)
			return rs, keys
		}
		rs, keys = append(rs, rc), append(keys, key)
	}
	return rs, keys
}

func traceparent(r, p, i int) string {
	return fmt.Sprintf("00-%032x-%016x-01", r*1000000+p*1000+i+1, i+1)
}
