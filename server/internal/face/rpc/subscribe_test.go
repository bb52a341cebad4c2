package rpc_test

import (
	"testing"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func TestFreshSubscribeSnapshotsThenCaughtUpThenLive(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		head := publishN(t, c, "a/b", 5)
		st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{})
		got := st.until(isCaughtUp)
		// The bind status: at seq 1 on memory, unpositioned (seq 0) before
		// the commits on a durable store.
		first, wantSeq := got[0], uint64(1)
		if store.Durable {
			wantSeq = 0
		}
		if first.Seq != wantSeq || first.GetServerStatus() == nil {
			t.Fatalf("first message = %v, want ServerStatus at seq %d", first, wantSeq)
		}
		if st := first.GetServerStatus(); st.InstanceEpoch != srv.Hub().Epoch() || st.State != ringcastv1.ServerState_SERVER_STATE_SERVING {
			t.Fatalf("bind status = %v", st)
		}
		if seqs := positioned(t, store, got); !equalSeqs(seqs, bound(store, span(store.FirstCommit(), head)...)) {
			t.Fatalf("snapshot seqs = %v, want the commits up to %d (after the status at 1 on memory)", seqs, head)
		}
		if cu := got[len(got)-1].GetCaughtUp(); cu.HeadSeq != head {
			t.Fatalf("CaughtUp.head_seq = %d, want %d", cu.HeadSeq, head)
		}
		for _, m := range got {
			if m.InstanceEpoch != srv.Hub().Epoch() {
				t.Fatalf("message without the running epoch: %v", m)
			}
		}
		live := publish(t, c, fact("a/b", "", 99))
		if m := st.next(); m.Seq != live || m.GetCommit() == nil {
			t.Fatalf("live message = %v, want commit %d", m, live)
		}
	})
}

func TestResumeReplaysExactlyTheMissedEvents(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		head := publishN(t, c, "a/b", 10)
		epoch := srv.Hub().Epoch()
		for _, n := range []uint64{1, 4, head - 1, head} {
			st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: n, InstanceEpoch: epoch, EndAtHead: true})
			got := st.rest()
			var want []uint64
			if n < head {
				want = span(n+1, head)
			}
			if seqs := positioned(t, store, got); !equalSeqs(seqs, want) {
				t.Fatalf("resume after %d: seqs %v, want %v", n, seqs, want)
			}
			if !isCaughtUp(got[len(got)-1]) {
				t.Fatalf("resume after %d: last message %v, want CaughtUp", n, got[len(got)-1])
			}
		}
	})
}

func TestUnservableCursorsGetResyncRequired(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Window = 8
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		// The ring holds 14..21 after the status at 1 on memory; the stream
		// (MaxMsgs = W) holds 13..20 on a durable store.
		head := publishN(t, c, "a/b", 20)
		epoch := srv.Hub().Epoch()
		waitOldest(t, srv, head-7)
		oldest, h := srv.Hub().Bounds()
		if h != head || oldest != head-7 {
			t.Fatalf("bounds = [%d, %d], want [%d, %d]", oldest, h, head-7, head)
		}
		cases := []struct {
			name   string
			req    *ringcastv1.SubscribeEventsRequest
			reason ringcastv1.Reason
		}{
			{"epoch zero", &ringcastv1.SubscribeEventsRequest{SinceSeq: head}, ringcastv1.Reason_REASON_EPOCH_MISMATCH},
			{"foreign epoch", &ringcastv1.SubscribeEventsRequest{SinceSeq: head, InstanceEpoch: epoch ^ 1}, ringcastv1.Reason_REASON_EPOCH_MISMATCH},
			{"ahead by one", &ringcastv1.SubscribeEventsRequest{SinceSeq: head + 1, InstanceEpoch: epoch}, ringcastv1.Reason_REASON_CURSOR_AHEAD},
			{"far ahead", &ringcastv1.SubscribeEventsRequest{SinceSeq: head + 1_000_000, InstanceEpoch: epoch}, ringcastv1.Reason_REASON_CURSOR_AHEAD},
			{"too old", &ringcastv1.SubscribeEventsRequest{SinceSeq: oldest - 2, InstanceEpoch: epoch}, ringcastv1.Reason_REASON_CURSOR_TOO_OLD},
			{"fact of an evicted commit", &ringcastv1.SubscribeEventsRequest{SinceSeq: oldest - 1, SinceFact: 1, InstanceEpoch: epoch}, ringcastv1.Reason_REASON_FACT_OUT_OF_RANGE},
			{"fact beyond the commit", &ringcastv1.SubscribeEventsRequest{SinceSeq: head, SinceFact: 1, InstanceEpoch: epoch}, ringcastv1.Reason_REASON_FACT_OUT_OF_RANGE},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got := subscribe(t, c, tc.req).rest()
				if len(got) != 1 {
					t.Fatalf("got %d messages %v, want exactly one ResyncRequired", len(got), got)
				}
				m := got[0]
				rr := m.GetResyncRequired()
				if rr == nil || m.Seq != 0 || m.InstanceEpoch != epoch {
					t.Fatalf("got %v, want ResyncRequired with seq 0 and the running epoch", m)
				}
				want := &ringcastv1.ResyncRequired{Reason: tc.reason, RequestedSeq: tc.req.SinceSeq, OldestSeq: oldest, HeadSeq: head}
				if rr.Reason != want.Reason || rr.RequestedSeq != want.RequestedSeq || rr.OldestSeq != want.OldestSeq || rr.HeadSeq != want.HeadSeq {
					t.Fatalf("ResyncRequired = %v, want %v", rr, want)
				}
			})
		}
		t.Run("window edge O-1 is servable", func(t *testing.T) {
			got := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: oldest - 1, InstanceEpoch: epoch, EndAtHead: true}).rest()
			if seqs := positioned(t, store, got); !equalSeqs(seqs, span(oldest, head)) {
				t.Fatalf("seqs = %v, want %d..%d", seqs, oldest, head)
			}
		})
		t.Run("since_seq 0 with a foreign epoch is served", func(t *testing.T) {
			got := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{InstanceEpoch: epoch ^ 1, EndAtHead: true}).rest()
			if seqs := positioned(t, store, got); !equalSeqs(seqs, span(oldest, head)) {
				t.Fatalf("seqs = %v, want the retained %d..%d", seqs, oldest, head)
			}
		})
	})
}

// TestRestartedServerAnswersOldCursorWithEpochMismatch: on memory a
// restart is a new epoch, and an old cursor resyncs; on a durable store
// the epoch is the stream's, and the old cursor resumes.
func TestRestartedServerAnswersOldCursorWithEpochMismatch(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		head := publishN(t, c, "a/b", 3)
		oldEpoch := srv.Hub().Epoch()
		srv.Restart()
		c = srv.Client(p) // the old client's pooled connections died with the old instance
		if store.Durable {
			// The log is the stream: the restart keeps its epoch and seqs,
			// and the old cursor resumes exactly.
			if srv.Hub().Epoch() != oldEpoch {
				t.Fatalf("restart on a durable store changed the epoch %x to %x", oldEpoch, srv.Hub().Epoch())
			}
			more := publishN(t, c, "a/b", 5)
			got := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: head, InstanceEpoch: oldEpoch, EndAtHead: true}).rest())
			if seqs := positioned(t, store, got); !equalSeqs(seqs, span(head+1, more)) || !isCaughtUp(got[len(got)-1]) {
				t.Fatalf("old cursor after a restart: %v, want %d..%d then CaughtUp", got, head+1, more)
			}
			return
		}
		if srv.Hub().Epoch() == oldEpoch {
			t.Fatal("restart kept the epoch")
		}
		publishN(t, c, "a/b", 5) // the new instance's seqs cover the old cursor's
		got := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: head, InstanceEpoch: oldEpoch}).rest()
		if len(got) != 1 || got[0].GetResyncRequired().GetReason() != ringcastv1.Reason_REASON_EPOCH_MISMATCH {
			t.Fatalf("got %v, want one ResyncRequired(EPOCH_MISMATCH)", got)
		}
	})
}
