package rpc_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// shareServer serves a dedupe table of 8 keys: a share of 4.
func shareServer(t *testing.T) *ringtest.Server {
	cfg := ringtest.Config()
	cfg.DedupeKeys = 8
	return ringtest.Start(t, cfg)
}

// TestOneClientCannotFillTheDedupeTable: one client holds at most its
// share of the dedupe table (half of --dedupe-keys by default); past it
// its new keys are refused with resource_exhausted and a Retry-After, on
// Publish and PublishBatch and every protocol, while another client's new
// keys are still taken and the first client's retries of its remembered
// keys still get their receipts.
func TestOneClientCannotFillTheDedupeTable(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
		srv := shareServer(t)
		ctx := context.Background()
		greedy, greedyHTTP := clientFrom(t, srv, p, "127.0.0.1")
		other, _ := clientFrom(t, srv, p, "127.0.0.2")
		pub := func(c ringcastv1connect.EventServiceClient, key string) (*ringcastv1.PublishResponse, error) {
			res, err := c.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact("a/b", "", 1)}, IdempotencyKey: key}))
			if err != nil {
				return nil, err
			}
			return res.Msg, nil
		}
		for i := range 4 {
			if _, err := pub(greedy, fmt.Sprint("g", i)); err != nil {
				t.Fatalf("key %d of a share of 4: %v", i, err)
			}
		}
		_, before := srv.Hub().Bounds()
		_, err := pub(greedy, "g4")
		checkRetryAfter(t, err, 600)
		if !strings.Contains(err.Error(), "dedupe-keys-per-client") {
			t.Fatalf("refusal %q does not name dedupe-keys-per-client", err)
		}
		_, err = greedy.PublishBatch(ctx, connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: []*ringcastv1.PublishRequest{
			{Facts: []*ringcastv1.Fact{fact("a/b", "", 1)}},
			{Facts: []*ringcastv1.Fact{fact("a/b", "", 1)}, IdempotencyKey: "g5"},
		}}))
		checkRetryAfter(t, err, 600)
		if p == ringcast.ProtocolConnect {
			status, after, body := postConnect(t, greedyHTTP, srv.URL, ringcastv1connect.EventServicePublishProcedure,
				`{"facts":[{"topic":"a/b","type":"t","data":{}}],"idempotencyKey":"g6"}`)
			if status != http.StatusTooManyRequests || after == "" || !strings.Contains(body, "resource_exhausted") {
				t.Fatalf("Connect unary past the share: %d Retry-After %q %s, want 429 with Retry-After", status, after, body)
			}
		}
		if _, head := srv.Hub().Bounds(); head != before {
			t.Fatalf("refused publishes appended: head %d -> %d", before, head)
		}
		if r, err := pub(greedy, "g0"); err != nil || !r.GetDuplicate() {
			t.Fatalf("retry of a remembered key past the share: %v %v, want its receipt", r, err)
		}
		if r, err := pub(greedy, ""); err != nil || r.GetDuplicate() {
			t.Fatalf("a publish without a key past the share: %v %v, want appended", r, err)
		}
		for i := range 4 {
			if _, err := pub(other, fmt.Sprint("o", i)); err != nil {
				t.Fatalf("another client's key %d: %v", i, err)
			}
		}
	})
}

// TestABatchCannotTakeMoreThanAShare: a PublishBatch of more new keys than
// one client may hold is refused with invalid_argument naming
// dedupe-keys-per-client, even from a client holding no key, on every
// protocol; nothing is appended, and the same keys in batches within the
// share are taken.
func TestABatchCannotTakeMoreThanAShare(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
		srv := shareServer(t)
		ctx := context.Background()
		c, _ := clientFrom(t, srv, p, "127.0.0.1")
		batch := func(keys ...string) error {
			req := &ringcastv1.PublishBatchRequest{}
			for _, k := range keys {
				req.Commits = append(req.Commits, &ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact("a/b", "", 1)}, IdempotencyKey: k})
			}
			_, err := c.PublishBatch(ctx, connect.NewRequest(req))
			return err
		}
		_, before := srv.Hub().Bounds()
		err := batch("k0", "k1", "k2", "k3", "k4")
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "dedupe-keys-per-client 4") || !strings.Contains(err.Error(), "smaller batches") {
			t.Fatalf("5 new keys in one batch with a share of 4: %v, want invalid_argument naming dedupe-keys-per-client", err)
		}
		if _, head := srv.Hub().Bounds(); head != before {
			t.Fatalf("the refused batch appended: head %d -> %d", before, head)
		}
		if err := batch("k0", "k1", "k2", "k3"); err != nil {
			t.Fatalf("4 new keys in one batch with a share of 4: %v", err)
		}
	})
}
