// Package storetest is the stream contract every store passes: one suite,
// run by Run on a store through the whole server (every protocol, SSE
// included), so that a store is proved by the same rows as every other.
// Its own tests run it on every store of ringtest.Stores; a store's
// package runs it on its other forms (natslog on the embedded server).
// Adding a store is: implement hub.Log (and the capability interfaces it
// has, see hub.BatchLog), open it in app's openStore, give ringtest a
// Store for it, and pass Run. The per-store tables of other suites take
// their stores and configs from ForEachStoreAndProtocol.
package storetest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// Config is the suite's config of a fresh server on st: on a durable store
// a ring of 4 whose stream keeps 64 commits, so that resumes also read
// from the store behind the ring. Call it once per server.
func Config(t testing.TB, st ringtest.Store) app.Config {
	t.Helper()
	cfg := ringtest.Config()
	if st.Durable {
		cfg.Window = 4
		st = st.Retaining(64)
	}
	return st.Config(t, cfg)
}

// ForEachStoreAndProtocol runs f in one subtest per store and protocol,
// named store/protocol, with the suite's config of a fresh server on the
// store (Config).
func ForEachStoreAndProtocol(t *testing.T, stores []ringtest.Store, f func(t *testing.T, st ringtest.Store, cfg app.Config, p ringcast.Protocol)) {
	t.Helper()
	for _, st := range stores {
		for _, p := range ringtest.Protocols {
			t.Run(st.Name+"/"+string(p), func(t *testing.T) { f(t, st, Config(t, st), p) })
		}
	}
}

// Run runs the suite on st, one subtest per row and protocol.
func Run(t *testing.T, st ringtest.Store) {
	t.Helper()
	for _, p := range ringtest.Protocols {
		t.Run("contract/"+string(p), func(t *testing.T) { contract(t, st, Config(t, st), p) })
		t.Run("restart/"+string(p), func(t *testing.T) { restart(t, st, Config(t, st), p) })
	}
}

// contract runs the core rows of the subscribe contract: snapshot then
// live, resume after a cursor (older than the ring with a durable store;
// also over SSE by Last-Event-ID), epoch mismatch, cursor ahead,
// idempotent publish, latest per key.
func contract(t *testing.T, st ringtest.Store, cfg app.Config, p ringcast.Protocol) {
	srv := ringtest.Start(t, cfg)
	c := srv.Client(p)
	var seqs []uint64
	for i := range 8 {
		seqs = append(seqs, Publish(t, c, "", Fact("g/a", "k", i)).Seq)
	}
	epoch := srv.Hub().Epoch()
	head := seqs[7]

	// Snapshot, CaughtUp, then a live commit.
	live := make(chan uint64, 1)
	go func() {
		commits, _ := Read(t, c, &ringcastv1.SubscribeEventsRequest{}, func(m *ringcastv1.SubscribeEventsResponse) bool {
			return m.GetCommit() != nil && m.Seq > head
		})
		live <- commits[len(commits)-1]
	}()
	next := Publish(t, c, "", Fact("g/a", "k", 8)).Seq
	if got := ringtest.Wait(t, live, 20*time.Second, "live commit"); got != next {
		t.Fatalf("live commit %d, want %d", got, next)
	}

	// Resume after the second commit: the rest, once, in order.
	commits, msgs := Read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: seqs[1], InstanceEpoch: epoch, EndAtHead: true}, nil)
	want := append(append([]uint64(nil), seqs[2:]...), next)
	if !Equal(commits, want) || msgs[len(msgs)-1].GetCaughtUp() == nil {
		t.Fatalf("resume after %d: commits %v, want %v then CaughtUp", seqs[1], commits, want)
	}

	// The same resume over SSE, by Last-Event-ID (once per store).
	if p == ringcast.ProtocolConnect {
		ids := SSEUntil(t, srv.URL, sse.FormatID(epoch, seqs[1], 0), sse.FormatID(epoch, next, 0))
		var wantIDs []string
		for _, s := range want {
			wantIDs = append(wantIDs, sse.FormatID(epoch, s, 0))
		}
		if fmt.Sprint(Positions(ids)) != fmt.Sprint(wantIDs) {
			t.Fatalf("SSE resume after %d: ids %v, want %v", seqs[1], ids, wantIDs)
		}
	}

	// Another epoch's cursor, and a cursor ahead of head.
	_, msgs = Read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: 1, InstanceEpoch: epoch + 1}, nil)
	if rr := msgs[len(msgs)-1].GetResyncRequired(); rr.GetReason() != ringcastv1.Reason_REASON_EPOCH_MISMATCH {
		t.Fatalf("other epoch: %v, want EPOCH_MISMATCH", msgs)
	}
	_, msgs = Read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: next + 10, InstanceEpoch: epoch}, nil)
	if rr := msgs[len(msgs)-1].GetResyncRequired(); rr.GetReason() != ringcastv1.Reason_REASON_CURSOR_AHEAD {
		t.Fatalf("cursor ahead: %v, want CURSOR_AHEAD", msgs)
	}

	// Idempotent publish.
	r1 := Publish(t, c, "once", Fact("g/b", "b", 1))
	r2 := Publish(t, c, "once", Fact("g/b", "b", 1))
	if r1.Duplicate || !r2.Duplicate || r2.Seq != r1.Seq || !r2.EventTime.AsTime().Equal(r1.EventTime.AsTime()) {
		t.Fatalf("receipts %v then %v, want the second a duplicate of the first", r1, r2)
	}

	// Latest per key.
	_, msgs = Read(t, c, &ringcastv1.SubscribeEventsRequest{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true}, nil)
	latest := map[string]float64{}
	for _, m := range msgs {
		for _, f := range m.GetCommit().GetFacts() {
			latest[f.Key] = f.GetData().Fields["n"].GetNumberValue()
		}
	}
	if len(latest) != 2 || latest["k"] != 8 || latest["b"] != 1 {
		t.Fatalf("%s: latest per key %v, want k=8 b=1", st.Name, latest)
	}
}

// restart: after a restart a durable store serves the old cursor (same
// epoch, no resync) and still knows the keys it deduplicates; memory
// answers EPOCH_MISMATCH, as it always has.
func restart(t *testing.T, st ringtest.Store, cfg app.Config, p ringcast.Protocol) {
	srv := ringtest.Start(t, cfg)
	c := srv.Client(p)
	var seqs []uint64
	for i := range 6 {
		seqs = append(seqs, Publish(t, c, "k"+string(rune('a'+i)), Fact("g/a", "k", i)).Seq)
	}
	epoch := srv.Hub().Epoch()
	srv.Restart()
	c = srv.Client(p)
	commits, msgs := Read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: seqs[1], InstanceEpoch: epoch, EndAtHead: true}, nil)
	if !st.Durable {
		if rr := msgs[len(msgs)-1].GetResyncRequired(); rr.GetReason() != ringcastv1.Reason_REASON_EPOCH_MISMATCH {
			t.Fatalf("memory after restart: %v, want EPOCH_MISMATCH", msgs)
		}
		return
	}
	if srv.Hub().Epoch() != epoch || !Equal(commits, seqs[2:]) {
		t.Fatalf("after restart: epoch %x (was %x), commits %v, want %v", srv.Hub().Epoch(), epoch, commits, seqs[2:])
	}
	if r := Publish(t, c, "kc", Fact("g/a", "k", 2)); !r.Duplicate || r.Seq != seqs[2] {
		t.Fatalf("retried key after restart: %v, want a duplicate of seq %d", r, seqs[2])
	}
}

// Publish publishes facts with key through c and returns the receipt.
func Publish(t testing.TB, c ringcastv1connect.EventServiceClient, key string, facts ...*ringcastv1.Fact) *ringcastv1.PublishResponse {
	t.Helper()
	res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts, IdempotencyKey: key}))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res.Msg
}

// Read subscribes and reads until the stream ends OK or stop accepts a
// message; it checks positioned seqs strictly increase and returns the
// commit seqs and every message.
func Read(t *testing.T, c ringcastv1connect.EventServiceClient, req *ringcastv1.SubscribeEventsRequest, stop func(*ringcastv1.SubscribeEventsResponse) bool) ([]uint64, []*ringcastv1.SubscribeEventsResponse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.SubscribeEvents(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var msgs []*ringcastv1.SubscribeEventsResponse
	var commits []uint64
	var last uint64
	for s.Receive() {
		m := s.Msg()
		msgs = append(msgs, m)
		if m.Seq > 0 {
			if m.Seq <= last {
				t.Fatalf("positioned seq %d after %d", m.Seq, last)
			}
			last = m.Seq
		}
		if m.GetCommit() != nil {
			commits = append(commits, m.Seq)
		}
		if stop != nil && stop(m) {
			return commits, msgs
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream ended with %v", err)
	}
	return commits, msgs
}

// Positions is ids less their fingerprints.
func Positions(ids []string) []string {
	var out []string
	for _, id := range ids {
		ep, seq, _, _ := sse.ParseLastEventID(id)
		out = append(out, sse.FormatID(ep, seq, 0))
	}
	return out
}

// SSEUntil opens /events on base with Last-Event-ID lastID and returns the
// ids of the commit frames up to and including wantID.
func SSEUntil(t *testing.T, base, lastID, wantID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	req.Header.Set("Last-Event-ID", lastID)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ids []string
	var id, event string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case line == "":
			if event == names.EventGap {
				t.Fatalf("gap resuming %s", lastID)
			}
			if event == names.EventCommit {
				ids = append(ids, id)
				if ep, seq, fp, err := sse.ParseLastEventID(id); err != nil || fp == 0 {
					t.Fatalf("commit id %q: %v, or no fingerprint", id, err)
				} else if sse.FormatID(ep, seq, 0) == wantID {
					return ids
				}
			}
			id, event = "", ""
		}
	}
	t.Fatalf("stream ended before %s: %v", wantID, sc.Err())
	return nil
}

// Fact is a fact on topic with key whose data is {"n": n}.
func Fact(topic, key string, n int) *ringcastv1.Fact {
	s, _ := structpb.NewStruct(map[string]any{"n": float64(n)})
	return &ringcastv1.Fact{Topic: topic, Type: "test.fact", Key: key, Payload: &ringcastv1.Fact_Data{Data: s}}
}

// Equal reports whether a and b hold the same seqs in the same order.
func Equal(a, b []uint64) bool { return slices.Equal(a, b) }
