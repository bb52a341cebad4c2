package rpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// reusedMsg is what a reuse of a key with other facts is told: no seq, no
// receipt, nothing of the earlier commit.
const reusedMsg = "this idempotency key was already used, within the dedupe window, for a commit with other facts; a retry must send the same facts, a new commit needs a new key"

// head is the server's head seq, as a fresh stream's CaughtUp says it.
func head(t *testing.T, srv *ringtest.Server) uint64 {
	t.Helper()
	_, h := srv.Hub().Bounds()
	return h
}

// TestKeyReusedWithOtherFactsIsRefused: on every store and protocol, a key
// sent again with other facts (another payload, another topic, facts in
// another order) is refused already_exists with a message that names
// nothing of the first commit, and appends nothing; in a batch, the
// commit is named and the whole batch refused, also when the reuse is
// inside the batch itself; an identical retry, alone or in a batch, still
// gets the original receipt.
func TestKeyReusedWithOtherFactsIsRefused(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		a, b := fact("a/x", "", 1), fact("b/y", "", 2)
		r := keyed(t, c, "order-42", a, b)
		at := head(t, srv)
		for name, facts := range map[string][]*ringcastv1.Fact{
			"other data":  {fact("a/x", "", 9), b},
			"other topic": {fact("a/z", "", 1), b},
			"other order": {b, a},
			"fewer facts": {a},
		} {
			_, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts, IdempotencyKey: "order-42"}))
			var ce *connect.Error
			if connect.CodeOf(err) != connect.CodeAlreadyExists || !asConnect(err, &ce) || ce.Message() != reusedMsg {
				t.Fatalf("%s: %v, want already_exists: %s", name, err, reusedMsg)
			}
		}
		batch := func(commits ...*ringcastv1.PublishRequest) (*ringcastv1.PublishBatchResponse, error) {
			res, err := c.PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: commits}))
			if err != nil {
				return nil, err
			}
			return res.Msg, nil
		}
		one := func(key string, facts ...*ringcastv1.Fact) *ringcastv1.PublishRequest {
			return &ringcastv1.PublishRequest{Facts: facts, IdempotencyKey: key}
		}
		_, err := batch(one("fresh", a), one("order-42", fact("a/x", "", 3)))
		if connect.CodeOf(err) != connect.CodeAlreadyExists || !strings.Contains(err.Error(), "commits[1].idempotency_key: "+reusedMsg) {
			t.Fatalf("a batch reusing a key: %v, want already_exists naming commits[1]", err)
		}
		_, err = batch(one("twice", a), one("twice", b))
		if connect.CodeOf(err) != connect.CodeAlreadyExists || !strings.Contains(err.Error(), "commits[1].idempotency_key") {
			t.Fatalf("a batch reusing its own key: %v, want already_exists naming commits[1]", err)
		}
		if now := head(t, srv); now != at {
			t.Fatalf("head %d after refusals, want %d: nothing appended", now, at)
		}
		if dup := keyed(t, c, "order-42", fact("a/x", "", 1), fact("b/y", "", 2)); !dup.Duplicate || dup.Seq != r.Seq || !dup.EventTime.AsTime().Equal(r.EventTime.AsTime()) {
			t.Fatalf("identical retry: %v, want the original receipt %v as a duplicate", dup, r)
		}
		rs, err := batch(one("order-42", a, b), one("fresh", a), one("fresh", a))
		if err != nil || !rs.Receipts[0].Duplicate || rs.Receipts[0].Seq != r.Seq || rs.Receipts[1].Duplicate || !rs.Receipts[2].Duplicate || rs.Receipts[2].Seq != rs.Receipts[1].Seq {
			t.Fatalf("identical retry in a batch: %v, %v", rs, err)
		}
	})
}

// TestKeyIsItsBytes: on every store and protocol, keys that differ only in
// inner whitespace are different keys, each deduplicated on its own; a key
// with a control character anywhere, or whitespace at either end, is
// invalid_argument on Publish, PublishBatch and GetPublishOutcome alike,
// and appends nothing.
func TestKeyIsItsBytes(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		seqs := map[uint64]string{}
		for _, k := range []string{"k1", "k 1", "k  1", "k\u00a01x", "é-1"} {
			r := keyed(t, c, k, fact("a/x", "", 1))
			if r.Duplicate || seqs[r.Seq] != "" {
				t.Fatalf("key %q: %v, a duplicate of %q", k, r, seqs[r.Seq])
			}
			seqs[r.Seq] = k
		}
		for seq, k := range seqs {
			if dup := keyed(t, c, k, fact("a/x", "", 1)); !dup.Duplicate || dup.Seq != seq {
				t.Fatalf("retry of %q: %v, want a duplicate of seq %d", k, dup, seq)
			}
			wantApplied(t, ringtest.Outcome(t, c, k), &ringcastv1.PublishResponse{Seq: seq, InstanceEpoch: srv.Hub().Epoch(), EventTime: keyedTime(t, c, k)})
		}
		at := head(t, srv)
		for _, k := range []string{" k1", "k1 ", "k1\n", "k\r\n1", "k\t1", "\t", " ", "k\x001", "k\u00851", "\u2003k", "k\u3000"} {
			_, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact("a/x", "", 1)}, IdempotencyKey: k}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "no control characters and no leading or trailing whitespace") {
				t.Fatalf("Publish with key %q: %v, want invalid_argument", k, err)
			}
			_, err = c.PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: []*ringcastv1.PublishRequest{
				{Facts: []*ringcastv1.Fact{fact("a/x", "", 1)}}, {Facts: []*ringcastv1.Fact{fact("a/x", "", 1)}, IdempotencyKey: k},
			}}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("PublishBatch with key %q: %v, want invalid_argument", k, err)
			}
			_, err = c.GetPublishOutcome(context.Background(), connect.NewRequest(&ringcastv1.GetPublishOutcomeRequest{IdempotencyKey: k}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("GetPublishOutcome with key %q: %v, want invalid_argument", k, err)
			}
		}
		if now := head(t, srv); now != at {
			t.Fatalf("head %d after refused keys, want %d", now, at)
		}
	})
}

// keyedTime is the event time of key's commit, from its outcome.
func keyedTime(t *testing.T, c ringcastv1connect.EventServiceClient, key string) *timestamppb.Timestamp {
	t.Helper()
	return ringtest.Outcome(t, c, key).GetReceipt().GetEventTime()
}

// TestSinceTimeMustBeAValidTimestamp: on every store and protocol (binary
// protobuf, which can carry any seconds and nanos), a since_time that is
// no valid google.protobuf.Timestamp is invalid_argument before anything
// is sent; a valid time after the head starts the stream at the head:
// CaughtUp first.
func TestSinceTimeMustBeAValidTimestamp(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		publishN(t, c, "a/x", 3)
		const maxInt64 = 1<<63 - 1
		for _, ts := range []*timestamppb.Timestamp{
			{Seconds: 0, Nanos: -1},
			{Seconds: 0, Nanos: 1e9},
			{Seconds: maxInt64},
			{Seconds: -maxInt64 - 1},
			{Seconds: 253402300800}, // 10000-01-01
			{Seconds: -62135596801}, // before year 1
		} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			st, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{SinceTime: ts}))
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			got := st.Receive()
			err = st.Err()
			st.Close()
			cancel()
			if got || connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "since_time is not a valid timestamp") {
				t.Fatalf("since_time %v: received %v, %v; want invalid_argument and nothing sent", ts, got, err)
			}
		}
		st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceTime: timestamppb.New(time.Now().Add(time.Hour))})
		defer st.close()
		for {
			m := st.next()
			if m.GetCommit() != nil {
				t.Fatalf("a time after the head replayed commit %d", m.GetSeq())
			}
			if isCaughtUp(m) {
				if got, want := m.GetCaughtUp().GetHeadSeq(), head(t, srv); got != want {
					t.Fatalf("CaughtUp at %d, want the head %d", got, want)
				}
				return
			}
		}
	})
}

func asConnect(err error, ce **connect.Error) bool {
	e, ok := err.(*connect.Error)
	*ce = e
	return ok
}
