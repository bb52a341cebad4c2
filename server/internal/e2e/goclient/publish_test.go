package goclient_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func TestPublishBatchReturnsOneReceiptPerCommitInOrder(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			c := newClient(t, srv.URL, p)
			_, before := srv.Hub().Bounds()
			f := func(key string) []*ringcastv1.Fact {
				return []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: key}}
			}
			rs, err := c.PublishBatch(context.Background(), []*ringcastv1.PublishRequest{
				{Facts: f("1")}, {Facts: f("2"), IdempotencyKey: "x"}, {Facts: f("2"), IdempotencyKey: "x"}, {Facts: f("4")},
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []struct {
				seq uint64
				dup bool
			}{{before + 1, false}, {before + 2, false}, {before + 2, true}, {before + 3, false}}
			if len(rs) != len(want) {
				t.Fatalf("%d receipts, want %d", len(rs), len(want))
			}
			for i, w := range want {
				if rs[i].Seq != w.seq || rs[i].Duplicate != w.dup {
					t.Fatalf("receipt %d = %v, want seq %d duplicate %v", i, rs[i], w.seq, w.dup)
				}
			}
			if _, err := c.PublishBatch(context.Background(), nil); connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("empty batch: %v, want invalid_argument", err)
			}
		})
	}
}

// TestKeyReusedIsSurfaced: a key sent again with other facts is refused
// at once, with one request, by Commit and PublishBatch alike, and
// ringcast.KeyReused tells it; the same facts still get the receipt.
func TestKeyReusedIsSurfaced(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			c := newClient(t, srv.URL, p)
			f := func(key string) []*ringcastv1.Fact { return []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: key}} }
			r, err := c.Commit(context.Background(), f("1"), ringcast.WithIdempotencyKey("order-42"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Commit(context.Background(), f("2"), ringcast.WithIdempotencyKey("order-42"), ringcast.WithAttempts(5))
			if !ringcast.KeyReused(err) || ringcast.Retryable(err) {
				t.Fatalf("reuse with other facts: %v, want KeyReused and not retryable", err)
			}
			if _, err := c.PublishBatch(context.Background(), []*ringcastv1.PublishRequest{{Facts: f("3"), IdempotencyKey: "order-42"}}); !ringcast.KeyReused(err) {
				t.Fatalf("batch reusing the key: %v, want KeyReused", err)
			}
			if dup, err := c.Commit(context.Background(), f("1"), ringcast.WithIdempotencyKey("order-42")); err != nil || !dup.Duplicate || dup.Seq != r.Seq {
				t.Fatalf("identical retry: %v, %v, want the original receipt", dup, err)
			}
			if ringcast.KeyReused(connect.NewError(connect.CodeInvalidArgument, nil)) {
				t.Fatal("KeyReused(invalid_argument) = true")
			}
		})
	}
}
