package rpc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// keyed publishes one commit of facts with key and returns its receipt.
func keyed(t *testing.T, c ringcastv1connect.EventServiceClient, key string, facts ...*ringcastv1.Fact) *ringcastv1.PublishResponse {
	t.Helper()
	res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts, IdempotencyKey: key}))
	if err != nil {
		t.Fatalf("publish %q: %v", key, err)
	}
	return res.Msg
}

// wantApplied fails unless o is applied with exactly the receipt r (not a
// duplicate).
func wantApplied(t *testing.T, o *ringcastv1.GetPublishOutcomeResponse, r *ringcastv1.PublishResponse) {
	t.Helper()
	want := proto.Clone(r).(*ringcastv1.PublishResponse)
	want.Duplicate = false
	if !o.GetApplied() || !proto.Equal(o.GetReceipt(), want) {
		t.Fatalf("outcome %v, want applied with the receipt %v", o, want)
	}
	if o.GetRememberedSince() == nil {
		t.Fatalf("outcome %v has no remembered_since", o)
	}
}

// wantUnknown fails unless o is the answer for an unknown key asked
// between before and after, with a dedupe window of window.
func wantUnknown(t *testing.T, o *ringcastv1.GetPublishOutcomeResponse, before, after time.Time, window time.Duration) {
	t.Helper()
	since := o.GetRememberedSince().AsTime()
	if o.GetApplied() || o.GetReceipt() != nil || o.GetRememberedSince() == nil {
		t.Fatalf("outcome %v, want not applied, no receipt, a remembered_since", o)
	}
	if since.After(after) || since.Before(before.Add(-window)) {
		t.Fatalf("remembered_since %v, want within [%v, %v]", since, before.Add(-window), after)
	}
}

// TestPublishOutcome: on every store and protocol, a key's outcome is its
// original receipt (after a duplicate publish too, and for a key of a
// batch), an unknown key is not applied with remembered_since between
// now - dedupe window and now, and an empty key is invalid_argument.
func TestPublishOutcome(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		window := srv.Hub().Status().GetLimits().GetDedupeWindow().AsDuration()

		r := keyed(t, c, "k1", fact("g/a", "a", 1), fact("g/b", "b", 2))
		wantApplied(t, ringtest.Outcome(t, c, "k1"), r)
		if dup := keyed(t, c, "k1", fact("g/a", "a", 1), fact("g/b", "b", 2)); !dup.Duplicate {
			t.Fatalf("retry %v, want a duplicate", dup)
		}
		wantApplied(t, ringtest.Outcome(t, c, "k1"), r)

		res, err := c.PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: []*ringcastv1.PublishRequest{
			{Facts: []*ringcastv1.Fact{fact("g/c", "c", 1)}, IdempotencyKey: "b1"},
			{Facts: []*ringcastv1.Fact{fact("g/c", "c", 2)}},
			{Facts: []*ringcastv1.Fact{fact("g/c", "c", 3)}, IdempotencyKey: "b2"},
		}}))
		if err != nil {
			t.Fatal(err)
		}
		wantApplied(t, ringtest.Outcome(t, c, "b1"), res.Msg.Receipts[0])
		wantApplied(t, ringtest.Outcome(t, c, "b2"), res.Msg.Receipts[2])

		before := time.Now()
		o := ringtest.Outcome(t, c, "never-published")
		wantUnknown(t, o, before, time.Now(), window)

		_, err = c.GetPublishOutcome(context.Background(), connect.NewRequest(&ringcastv1.GetPublishOutcomeRequest{}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("empty key: %v, want invalid_argument", err)
		}
	})
}

// TestPublishOutcomeByGET: GetPublishOutcome is callable by HTTP GET with
// JSON (Connect's GET form), as in docs/protocol.md's example, and its
// JSON names the fields as documented.
func TestPublishOutcomeByGET(t *testing.T) {
	ringtest.ForEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		r := keyed(t, srv.Client(ringcast.ProtocolConnect), "get-1", fact("g/a", "a", 1))
		get := func(key string) map[string]any {
			t.Helper()
			q := url.Values{"encoding": {"json"}, "message": {`{"idempotencyKey":"` + key + `"}`}}
			res, err := http.Get(srv.URL + ringcastv1connect.EventServiceGetPublishOutcomeProcedure + "?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("GET: %s, %v (%v)", res.Status, m, err)
			}
			return m
		}
		m := get("get-1")
		rec, _ := m["receipt"].(map[string]any)
		// protobuf JSON writes 3, 6 or 9 fraction digits, so the instant is
		// compared, not its spelling.
		eventTime, _ := rec["eventTime"].(string)
		at, err := time.Parse(time.RFC3339Nano, eventTime)
		if m["applied"] != true || rec == nil || rec["seq"] != jsonUint(r.Seq) || rec["instanceEpoch"] != jsonUint(r.InstanceEpoch) ||
			err != nil || !at.Equal(r.EventTime.AsTime()) || m["rememberedSince"] == nil {
			t.Fatalf("GET outcome %v, want applied with the receipt %v", m, r)
		}
		m = get("get-unknown")
		if _, ok := m["applied"]; ok || m["receipt"] != nil || m["rememberedSince"] == nil {
			t.Fatalf("GET outcome of an unknown key %v, want only rememberedSince", m)
		}
	})
}

// jsonUint is a uint64 as protobuf JSON writes it: a decimal string.
func jsonUint(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestPublishOutcomeOnEveryReplica: two replicas on one stream answer a
// key alike, whichever replica published it, at once after the publish
// (the answer is read from the stream, not from what a replica has
// received).
func TestPublishOutcomeOnEveryReplica(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			rs := ringtest.JetStream.StartReplicas(t, ringtest.Config(), 2)
			a, b := rs[0].Client(p), rs[1].Client(p)
			for i, pub := range []ringcastv1connect.EventServiceClient{a, b} {
				key := []string{"on-a", "on-b"}[i]
				r := keyed(t, pub, key, fact("g/a", "a", i))
				for _, c := range []ringcastv1connect.EventServiceClient{b, a} {
					wantApplied(t, ringtest.Outcome(t, c, key), r)
				}
			}
			before := time.Now()
			oa, ob := ringtest.Outcome(t, a, "none"), ringtest.Outcome(t, b, "none")
			after := time.Now()
			window := rs[0].Hub().Status().GetLimits().GetDedupeWindow().AsDuration()
			wantUnknown(t, oa, before, after, window)
			wantUnknown(t, ob, before, after, window)
		})
	}
}

// TestPublishOutcomeAfterTheCommitLeftTheWindow: a key whose commit left
// the ring is still answered on memory (the dedupe table keeps the key
// for its window); on JetStream, whose stream here keeps as many commits
// as the window, a commit the stream's limits discarded is answered not
// applied, with remembered_since after it (JetStream forgets the keys of
// discarded messages when it restarts).
func TestPublishOutcomeAfterTheCommitLeftTheWindow(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Window = 4
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		r := keyed(t, c, "old", fact("g/a", "a", 1))
		publishN(t, c, "g/b", 8)
		if oldest, _ := srv.Hub().Bounds(); !store.Durable && oldest <= r.Seq {
			t.Fatalf("oldest seq %d: the commit %d is still held", oldest, r.Seq)
		}
		o := ringtest.Outcome(t, c, "old")
		if !store.Durable {
			wantApplied(t, o, r)
			return
		}
		if o.GetApplied() || o.GetReceipt() != nil || !o.GetRememberedSince().AsTime().After(r.EventTime.AsTime()) {
			t.Fatalf("outcome of a discarded commit %v, want not applied, remembered since after %v", o, r.EventTime.AsTime())
		}
	})
}
