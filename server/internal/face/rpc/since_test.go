package rpc_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// stamped is a commit's receipt: its seq and event time.
type stamped struct {
	seq uint64
	at  time.Time
}

// publishStamped appends one commit of facts and returns its receipt.
func publishStamped(t *testing.T, c ringcastv1connect.EventServiceClient, facts ...*ringcastv1.Fact) stamped {
	t.Helper()
	res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts}))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return stamped{res.Msg.Seq, res.Msg.EventTime.AsTime()}
}

// publishBatchStamped appends one one-fact commit per topic in one
// request: its commits share one event time.
func publishBatchStamped(t *testing.T, c ringcastv1connect.EventServiceClient, topics ...string) []stamped {
	t.Helper()
	var commits []*ringcastv1.PublishRequest
	for i, tp := range topics {
		commits = append(commits, &ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact(tp, "", i)}})
	}
	res, err := c.PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: commits}))
	if err != nil {
		t.Fatalf("publish batch: %v", err)
	}
	var out []stamped
	for _, r := range res.Msg.Receipts {
		out = append(out, stamped{r.Seq, r.EventTime.AsTime()})
	}
	return out
}

// commitSeqs returns the seqs of the commits among msgs.
func commitSeqs(msgs []*ringcastv1.SubscribeEventsResponse) []uint64 {
	var seqs []uint64
	for _, m := range msgs {
		if m.GetCommit() != nil {
			seqs = append(seqs, m.Seq)
		}
	}
	return seqs
}

// TestSinceTimeStartsAtTheFirstCommitAtOrAfterIt: a stream from a time
// replays every retained commit whose event time is at or after it, oldest
// first — a commit stamped exactly at the time included, equal times of
// consecutive commits all included — then CaughtUp and the tail, with the
// filters and bounds of any stream (docs/protocol.md, "Starting from a
// time").
func TestSinceTimeStartsAtTheFirstCommitAtOrAfterIt(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		c1 := publishStamped(t, c, fact("a/x", "", 1))
		c2 := publishStamped(t, c, fact("b/x", "", 2))
		pair := publishBatchStamped(t, c, "a/y", "a/z") // one event time
		c3, c4 := pair[0], pair[1]
		c5 := publishStamped(t, c, fact("b/y", "", 5))
		between := c1.at.Add(time.Nanosecond)
		if !c3.at.Equal(c4.at) || !c2.at.After(between) || !c3.at.After(c2.at) {
			t.Fatalf("event times %v %v %v %v: want c1 < c1+1ns < c2 < c3 = c4", c1.at, c2.at, c3.at, c4.at)
		}
		since := func(at time.Time) *ringcastv1.SubscribeEventsRequest {
			return &ringcastv1.SubscribeEventsRequest{SinceTime: timestamppb.New(at), EndAtHead: true}
		}
		cases := []struct {
			name string
			req  *ringcastv1.SubscribeEventsRequest
			want []uint64
		}{
			{"exactly at a commit's time", since(c2.at), span(c2.seq, c5.seq)},
			{"between two commits", since(between), span(c2.seq, c5.seq)},
			{"at equal times of consecutive commits", since(c3.at), span(c3.seq, c5.seq)},
			// Nothing was evicted: the whole history from seq 1 (on memory
			// the bind ServerStatus at seq 1 first, as a replay from a
			// cursor would deliver it).
			{"before everything", since(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), bound(store, span(c1.seq, c5.seq)...)},
			{"the earliest timestamp", since(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)), bound(store, span(c1.seq, c5.seq)...)},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got := afterStatus(t, store, subscribe(t, c, tc.req).rest())
				if seqs := positioned(t, store, got); !equalSeqs(seqs, tc.want) {
					t.Fatalf("seqs %v, want %v", seqs, tc.want)
				}
				if cu := got[len(got)-1].GetCaughtUp(); cu == nil || cu.HeadSeq != c5.seq {
					t.Fatalf("last message %v, want CaughtUp at %d", got[len(got)-1], c5.seq)
				}
			})
		}
		t.Run("with a topic filter", func(t *testing.T) {
			req := since(c2.at)
			req.Topics = []string{"a"}
			got := afterStatus(t, store, subscribe(t, c, req).rest())
			if seqs := commitSeqs(got); !equalSeqs(seqs, []uint64{c3.seq, c4.seq}) {
				t.Fatalf("commits %v, want %d %d (the a/ commits at or after %v)", seqs, c3.seq, c4.seq, c2.at)
			}
			// c5 was skipped by the filter: covered by a Progress before
			// CaughtUp.
			n := len(got)
			if n < 2 || got[n-2].GetProgress() == nil || got[n-2].Seq != c5.seq || got[n-1].GetCaughtUp().GetHeadSeq() != c5.seq {
				t.Fatalf("stream ends %v, want Progress(%d) then CaughtUp(%d)", got[max(n-2, 0):], c5.seq, c5.seq)
			}
		})
		t.Run("after the head", func(t *testing.T) {
			st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceTime: timestamppb.New(c5.at.Add(time.Hour))})
			got := afterStatus(t, store, st.until(isCaughtUp))
			if len(got) != 1 || got[0].GetCaughtUp().GetHeadSeq() != c5.seq {
				t.Fatalf("stream starts %v, want just CaughtUp(%d)", got, c5.seq)
			}
			live := publishStamped(t, c, fact("a/x", "", 6))
			if m := st.next(); m.GetCommit() == nil || m.Seq != live.seq {
				t.Fatalf("after CaughtUp %v, want the live commit %d", m, live.seq)
			}
		})
		t.Run("until_seq", func(t *testing.T) {
			req := since(between)
			req.EndAtHead, req.UntilSeq = false, c3.seq
			got := afterStatus(t, store, subscribe(t, c, req).rest())
			if seqs := positioned(t, store, got); !equalSeqs(seqs, span(c2.seq, c3.seq)) {
				t.Fatalf("seqs %v, want %d..%d", seqs, c2.seq, c3.seq)
			}
			// A bound below the start is already passed.
			req = since(c5.at)
			req.EndAtHead, req.UntilSeq = false, c2.seq
			if got := afterStatus(t, store, subscribe(t, c, req).rest()); len(got) != 0 {
				t.Fatalf("until_seq %d below the start %d: got %v, want nothing", c2.seq, c5.seq, got)
			}
		})
	})
}

// TestSinceTimeBelowTheWindowIsACursorBelowIt: when commits at or after the
// time may have left the window, the answer is the one for a cursor below
// it — ResyncRequired(CURSOR_TOO_OLD), or with SNAPSHOT_INLINE a Gap and
// the snapshot — never a partial replay.
func TestSinceTimeBelowTheWindowIsACursorBelowIt(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Window = 8
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		var cs []stamped
		for i := range 20 {
			cs = append(cs, publishStamped(t, c, fact("a/b", "", i)))
		}
		head := cs[len(cs)-1].seq
		waitOldest(t, srv, head-7)
		oldest, _ := srv.Hub().Bounds()
		epoch := srv.Hub().Epoch()
		early := timestamppb.New(cs[0].at)

		got := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceTime: early}).rest()
		if len(got) != 1 || got[0].GetResyncRequired() == nil || got[0].InstanceEpoch != epoch {
			t.Fatalf("got %v, want exactly one ResyncRequired", got)
		}
		rr := got[0].GetResyncRequired()
		if rr.Reason != ringcastv1.Reason_REASON_CURSOR_TOO_OLD || rr.RequestedSeq != 0 || rr.OldestSeq != oldest || rr.HeadSeq != head {
			t.Fatalf("ResyncRequired %v, want CURSOR_TOO_OLD requested 0 oldest %d head %d", rr, oldest, head)
		}

		st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceTime: early, OnUnservable: ringcastv1.OnUnservable_ON_UNSERVABLE_SNAPSHOT_INLINE, EndAtHead: true})
		all := st.rest()
		if len(all) == 0 || all[0].GetGap().GetReason() != ringcastv1.Reason_REASON_CURSOR_TOO_OLD || all[0].GetGap().GetRequestedSeq() != 0 {
			t.Fatalf("stream starts %v, want Gap(CURSOR_TOO_OLD, requested 0)", all)
		}
		rest := afterStatus(t, store, all[1:])
		if seqs := positioned(t, store, rest); !equalSeqs(seqs, span(oldest, head)) {
			t.Fatalf("snapshot after the gap %v, want %d..%d", seqs, oldest, head)
		}

		// A time inside the window is served: from the first commit at or
		// after it.
		in := cs[len(cs)-6]
		got = afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceTime: timestamppb.New(in.at), EndAtHead: true}).rest())
		if seqs := positioned(t, store, got); !equalSeqs(seqs, span(in.seq, head)) {
			t.Fatalf("seqs %v, want %d..%d", seqs, in.seq, head)
		}
	})
}

// TestSinceTimeReachesPastTheRingIntoTheStream: on JetStream a time older
// than the replica's ring but within the stream is found by the stream's
// own time lookup and served from the stream.
func TestSinceTimeReachesPastTheRingIntoTheStream(t *testing.T) {
	store := ringtest.JetStream.Retaining(1000)
	t.Run(store.Name, func(t *testing.T) {
		forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
			cfg := ringtest.Config()
			cfg.Window = 8
			srv := store.Start(t, cfg)
			c := srv.Client(p)
			var cs []stamped
			for i := range 30 {
				cs = append(cs, publishStamped(t, c, fact("a/b", "", i)))
			}
			head := cs[len(cs)-1].seq
			if oldest, _ := srv.Hub().Bounds(); oldest != 1 {
				t.Fatalf("oldest %d, want 1: the stream keeps every commit", oldest)
			}
			for _, from := range []stamped{cs[4], {1, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}} {
				got := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceTime: timestamppb.New(from.at), EndAtHead: true}).rest())
				if seqs := positioned(t, store, got); !equalSeqs(seqs, span(from.seq, head)) {
					t.Fatalf("since %v: seqs %v, want %d..%d", from.at, seqs, from.seq, head)
				}
			}
		})
	})
}
