package natslog_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// stores are the stores the contract rows run on: each returns the config
// of a fresh server.
var stores = []struct {
	name   string
	config func(t *testing.T) app.Config
}{
	{"memory", func(*testing.T) app.Config { return ringtest.Config() }},
	{"embedded", func(t *testing.T) app.Config {
		cfg := ringtest.Config()
		cfg.Window = 4 // so that resumes also read from the stream
		cfg.Store = app.Store{Kind: app.StoreEmbedded, DataDir: t.TempDir()}
		return cfg
	}},
}

func forEachStoreAndProtocol(t *testing.T, f func(t *testing.T, store string, cfg app.Config, p ringcast.Protocol)) {
	for _, st := range stores {
		for _, p := range ringtest.Protocols {
			t.Run(st.name+"/"+string(p), func(t *testing.T) { f(t, st.name, st.config(t), p) })
		}
	}
}

func rpcPublish(t *testing.T, c ringcastv1connect.EventServiceClient, key string, facts ...*ringcastv1.Fact) *ringcastv1.PublishResponse {
	t.Helper()
	res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts, IdempotencyKey: key}))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res.Msg
}

// read subscribes and reads until the stream ends OK or stop accepts a
// message; it checks positioned seqs strictly increase and returns the
// commit seqs and every message.
func read(t *testing.T, c ringcastv1connect.EventServiceClient, req *ringcastv1.SubscribeEventsRequest, stop func(*ringcastv1.SubscribeEventsResponse) bool) ([]uint64, []*ringcastv1.SubscribeEventsResponse) {
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

// TestContractOnEveryStore runs the core rows of the subscribe contract on
// every store and protocol: snapshot then live, resume after a cursor
// (older than the ring with a durable store; also over SSE by
// Last-Event-ID), epoch mismatch, cursor ahead, idempotent publish, latest
// per key.
func TestContractOnEveryStore(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store string, cfg app.Config, p ringcast.Protocol) {
		srv := ringtest.Start(t, cfg)
		c := srv.Client(p)
		var seqs []uint64
		for i := range 8 {
			seqs = append(seqs, rpcPublish(t, c, "", fact("g/a", "k", i)).Seq)
		}
		epoch := srv.Hub().Epoch()
		head := seqs[7]

		// Snapshot, CaughtUp, then a live commit.
		live := make(chan uint64, 1)
		go func() {
			commits, _ := read(t, c, &ringcastv1.SubscribeEventsRequest{}, func(m *ringcastv1.SubscribeEventsResponse) bool {
				return m.GetCommit() != nil && m.Seq > head
			})
			live <- commits[len(commits)-1]
		}()
		next := rpcPublish(t, c, "", fact("g/a", "k", 8)).Seq
		if got := ringtest.Wait(t, live, 20*time.Second, "live commit"); got != next {
			t.Fatalf("live commit %d, want %d", got, next)
		}

		// Resume after the second commit: the rest, once, in order.
		commits, msgs := read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: seqs[1], InstanceEpoch: epoch, EndAtHead: true}, nil)
		want := append(append([]uint64(nil), seqs[2:]...), next)
		if !equal(commits, want) || msgs[len(msgs)-1].GetCaughtUp() == nil {
			t.Fatalf("resume after %d: commits %v, want %v then CaughtUp", seqs[1], commits, want)
		}

		// The same resume over SSE, by Last-Event-ID (once per store).
		if p == ringcast.ProtocolConnect {
			ids := sseUntil(t, srv.URL, sse.FormatID(epoch, seqs[1], 0), sse.FormatID(epoch, next, 0))
			var wantIDs []string
			for _, s := range want {
				wantIDs = append(wantIDs, sse.FormatID(epoch, s, 0))
			}
			if fmt.Sprint(positions(ids)) != fmt.Sprint(wantIDs) {
				t.Fatalf("SSE resume after %d: ids %v, want %v", seqs[1], ids, wantIDs)
			}
		}

		// Another epoch's cursor, and a cursor ahead of head.
		_, msgs = read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: 1, InstanceEpoch: epoch + 1}, nil)
		if rr := msgs[len(msgs)-1].GetResyncRequired(); rr.GetReason() != ringcastv1.Reason_REASON_EPOCH_MISMATCH {
			t.Fatalf("other epoch: %v, want EPOCH_MISMATCH", msgs)
		}
		_, msgs = read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: next + 10, InstanceEpoch: epoch}, nil)
		if rr := msgs[len(msgs)-1].GetResyncRequired(); rr.GetReason() != ringcastv1.Reason_REASON_CURSOR_AHEAD {
			t.Fatalf("cursor ahead: %v, want CURSOR_AHEAD", msgs)
		}

		// Idempotent publish.
		r1 := rpcPublish(t, c, "once", fact("g/b", "b", 1))
		r2 := rpcPublish(t, c, "once", fact("g/b", "b", 1))
		if r1.Duplicate || !r2.Duplicate || r2.Seq != r1.Seq || !r2.EventTime.AsTime().Equal(r1.EventTime.AsTime()) {
			t.Fatalf("receipts %v then %v, want the second a duplicate of the first", r1, r2)
		}

		// Latest per key.
		_, msgs = read(t, c, &ringcastv1.SubscribeEventsRequest{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true}, nil)
		latest := map[string]float64{}
		for _, m := range msgs {
			for _, f := range m.GetCommit().GetFacts() {
				latest[f.Key] = f.GetData().Fields["n"].GetNumberValue()
			}
		}
		if len(latest) != 2 || latest["k"] != 8 || latest["b"] != 1 {
			t.Fatalf("%s: latest per key %v, want k=8 b=1", store, latest)
		}
	})
}

// TestRestartKeepsCursorsOnDurableStores: after a restart a durable store
// serves the old cursor (same epoch, no resync); memory answers
// EPOCH_MISMATCH, as it always has.
func TestRestartKeepsCursorsOnDurableStores(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store string, cfg app.Config, p ringcast.Protocol) {
		srv := ringtest.Start(t, cfg)
		c := srv.Client(p)
		var seqs []uint64
		for i := range 6 {
			seqs = append(seqs, rpcPublish(t, c, "k"+string(rune('a'+i)), fact("g/a", "k", i)).Seq)
		}
		epoch := srv.Hub().Epoch()
		srv.Restart()
		c = srv.Client(p)
		commits, msgs := read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: seqs[1], InstanceEpoch: epoch, EndAtHead: true}, nil)
		if store == "memory" {
			if rr := msgs[len(msgs)-1].GetResyncRequired(); rr.GetReason() != ringcastv1.Reason_REASON_EPOCH_MISMATCH {
				t.Fatalf("memory after restart: %v, want EPOCH_MISMATCH", msgs)
			}
			return
		}
		if srv.Hub().Epoch() != epoch || !equal(commits, seqs[2:]) {
			t.Fatalf("after restart: epoch %x (was %x), commits %v, want %v", srv.Hub().Epoch(), epoch, commits, seqs[2:])
		}
		if r := rpcPublish(t, c, "kc", fact("g/a", "k", 2)); !r.Duplicate || r.Seq != seqs[2] {
			t.Fatalf("retried key after restart: %v, want a duplicate of seq %d", r, seqs[2])
		}
	})
}

// sseUntil opens /events on base with Last-Event-ID lastID and returns the
// ids of the commit frames up to and including wantID.
// positions is ids less their fingerprints.
func positions(ids []string) []string {
	var out []string
	for _, id := range ids {
		ep, seq, _, _ := sse.ParseLastEventID(id)
		out = append(out, sse.FormatID(ep, seq, 0))
	}
	return out
}

func sseUntil(t *testing.T, base, lastID, wantID string) []string {
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

// TestCursorFromOneReplicaResumesOnAnother: two ringcast replicas on one
// JetStream stream share the epoch and the seqs. A cursor (and an SSE
// Last-Event-ID) from replica A resumes on replica B with no resync, no
// loss and no duplicate, and commits published through either reach both.
func TestCursorFromOneReplicaResumesOnAnother(t *testing.T) {
	ns, _ := embedded(t, t.TempDir())
	a, b := replicaServer(t, ns, 4), replicaServer(t, ns, 4)
	if a.Hub().Epoch() != b.Hub().Epoch() {
		t.Fatalf("replicas' epochs differ: %x, %x", a.Hub().Epoch(), b.Hub().Epoch())
	}
	epoch := a.Hub().Epoch()
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			ca, cb := a.Client(p), b.Client(p)
			var seqs []uint64
			for i := range 6 {
				c := ca
				if i%2 == 1 {
					c = cb
				}
				seqs = append(seqs, rpcPublish(t, c, "", fact("g/a", "k", i)).Seq)
			}
			// CaughtUp is relative to what the replica has received: let
			// both receive the last commit first.
			for _, r := range []*ringtest.Server{a, b} {
				for r.Hub().Status().HeadSeq < seqs[5] {
					time.Sleep(5 * time.Millisecond)
				}
			}
			for _, c := range []ringcastv1connect.EventServiceClient{ca, cb} {
				commits, msgs := read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: seqs[0], InstanceEpoch: epoch, EndAtHead: true}, nil)
				if !equal(commits, seqs[1:]) || msgs[len(msgs)-1].GetCaughtUp() == nil {
					t.Fatalf("resume after %d: commits %v, want %v then CaughtUp", seqs[0], commits, seqs[1:])
				}
			}
			ids := sseUntil(t, b.URL, sse.FormatID(epoch, seqs[0], 0), sse.FormatID(epoch, seqs[5], 0))
			var want []string
			for _, s := range seqs[1:] {
				want = append(want, sse.FormatID(epoch, s, 0))
			}
			if fmt.Sprint(positions(ids)) != fmt.Sprint(want) {
				t.Fatalf("SSE on B after A's id %d: %v, want %v", seqs[0], ids, want)
			}
			// Each commit's fingerprint is the same on both replicas: A's
			// ids, fingerprints included, resume on B.
			idsA := sseUntil(t, a.URL, sse.FormatID(epoch, seqs[0], 0), sse.FormatID(epoch, seqs[5], 0))
			if fmt.Sprint(idsA) != fmt.Sprint(ids) {
				t.Fatalf("SSE ids with fingerprints: A %v, B %v", idsA, ids)
			}
			if got := sseUntil(t, b.URL, idsA[0], sse.FormatID(epoch, seqs[5], 0)); fmt.Sprint(got) != fmt.Sprint(ids[1:]) {
				t.Fatalf("SSE on B after A's id %s: %v, want %v", idsA[0], got, ids[1:])
			}
		})
	}
}
