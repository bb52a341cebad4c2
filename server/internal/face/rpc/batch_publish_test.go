package rpc_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestPublishBatchAppendsInOrderAndSubscribersSeeEachCommit: one request,
// several commits, each its own seq and receipt, delivered as separate
// commits in request order; a key repeated within the batch is a duplicate.
// On JetStream the batch is one atomic batch (docs/scaling.md).
func TestPublishBatchAppendsInOrderAndSubscribersSeeEachCommit(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		_, before := srv.Hub().Bounds()
		res, err := c.PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: []*ringcastv1.PublishRequest{
			{Facts: []*ringcastv1.Fact{fact("a/b", "k1", 1), fact("a/c", "k2", 2)}, IdempotencyKey: "one"},
			{Facts: []*ringcastv1.Fact{fact("a/b", "k3", 3)}},
			{Facts: []*ringcastv1.Fact{fact("a/b", "k1", 1), fact("a/c", "k2", 2)}, IdempotencyKey: "one"}, // a retry within the batch
		}}))
		if err != nil {
			t.Fatal(err)
		}
		rs := res.Msg.GetReceipts()
		if len(rs) != 3 {
			t.Fatalf("%d receipts, want 3", len(rs))
		}
		for i, want := range []struct {
			seq uint64
			dup bool
		}{{before + 1, false}, {before + 2, false}, {before + 1, true}} {
			if rs[i].Seq != want.seq || rs[i].Duplicate != want.dup || rs[i].InstanceEpoch != srv.Hub().Epoch() {
				t.Fatalf("receipt %d = %v, want seq %d duplicate %v", i, rs[i], want.seq, want.dup)
			}
		}
		got := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: before, InstanceEpoch: srv.Hub().Epoch(), EndAtHead: true}).rest())
		var keys [][]string
		for _, m := range got {
			if cm := m.GetCommit(); cm != nil {
				var ks []string
				for _, f := range cm.Facts {
					ks = append(ks, f.Key)
				}
				keys = append(keys, ks)
			}
		}
		if seqs := positioned(t, store, got); !equalSeqs(seqs, span(before+1, before+2)) || len(keys) != 2 || strings.Join(keys[0], ",") != "k1,k2" || keys[1][0] != "k3" {
			t.Fatalf("delivered seqs %v keys %v, want two commits [k1 k2] [k3]", seqs, keys)
		}
	})
}

// TestBadPublishBatchIsRejectedWholeAndAppendsNothing: one bad commit among
// good ones fails the whole request, and nothing is appended.
func TestBadPublishBatchIsRejectedWholeAndAppendsNothing(t *testing.T) {
	good := &ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact("a/b", "", 1)}}
	cases := []struct {
		name    string
		commits []*ringcastv1.PublishRequest
		rule    string
	}{
		{"no commits", nil, "repeated.min_items"},
		{"a commit without facts", []*ringcastv1.PublishRequest{good, {}}, "repeated.min_items"},
		{"a bad topic in the last commit", []*ringcastv1.PublishRequest{good, good, {Facts: []*ringcastv1.Fact{fact("A/b", "", 2)}}}, "string.pattern"},
		{"too many commits", make1025Commits(), "repeated.max_items"},
	}
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		_, before := srv.Hub().Bounds()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := c.PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: tc.commits}))
				if ids := violations(t, err); !contains(ids, tc.rule) {
					t.Fatalf("violations %v, want %s", ids, tc.rule)
				}
				if _, head := srv.Hub().Bounds(); head != before {
					t.Fatalf("head moved from %d to %d after a rejected batch", before, head)
				}
			})
		}
		t.Run("non-finite number in the second commit", func(t *testing.T) {
			bad := fact("a/b", "", 0)
			bad.GetData().Fields["n"].Kind = nanKind()
			_, err := c.PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: []*ringcastv1.PublishRequest{good, {Facts: []*ringcastv1.Fact{good.Facts[0], bad}}}}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "commits[1].facts[1].data.n") {
				t.Fatalf("err %v, want invalid_argument naming commits[1].facts[1].data.n", err)
			}
			if _, head := srv.Hub().Bounds(); head != before {
				t.Fatalf("head moved from %d to %d", before, head)
			}
		})
		t.Run("draining", func(t *testing.T) {
			srv.Hub().Drain()
			_, head := srv.Hub().Bounds()
			_, err := c.PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: []*ringcastv1.PublishRequest{good}}))
			if connect.CodeOf(err) != connect.CodeUnavailable {
				t.Fatalf("err %v, want unavailable", err)
			}
			if strings.Contains(err.Error(), "hub:") {
				t.Fatalf("err %q names a package of the server's", err)
			}
			if _, now := srv.Hub().Bounds(); now != head {
				t.Fatalf("head moved from %d to %d", head, now)
			}
		})
	})
}

func make1025Commits() []*ringcastv1.PublishRequest {
	cs := make([]*ringcastv1.PublishRequest, 1025)
	for i := range cs {
		cs[i] = &ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "a", Type: "t"}}}
	}
	return cs
}

func nanKind() *structpb.Value_NumberValue {
	return &structpb.Value_NumberValue{NumberValue: math.NaN()}
}
