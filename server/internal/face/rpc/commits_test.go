package rpc_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// consumed is one fact a consumer took: (seq, index).
type consumed struct {
	seq   uint64
	index uint32
}

// TestStopAtAnyFactAndResumeSeesEveryFactOnce: a consumer stops after a
// random number of facts (mid-commit included), resumes with (seq, fact),
// and over all its sessions sees every fact exactly once.
func TestStopAtAnyFactAndResumeSeesEveryFactOnce(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		var want []consumed
		for i := range 12 {
			n := 1 + i%5
			facts := make([]*ringcastv1.Fact, n)
			for j := range facts {
				facts[j] = fact("a/b", "", j)
			}
			seq := publish(t, c, facts...)
			for j := range n {
				want = append(want, consumed{seq, uint32(j)})
			}
		}
		epoch := srv.Hub().Epoch()
		rng := rand.New(rand.NewPCG(1, uint64(len(p))))
		var got []consumed
		// Start before the first commit: after the bind status at seq 1 on
		// memory; with no cursor on a durable store, whose stream starts
		// with an unpositioned status.
		cur := struct {
			seq  uint64
			fact uint32
		}{store.FirstCommit() - 1, 0}
		for len(got) < len(want) {
			stopAfter := 1 + rng.IntN(7)
			st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: cur.seq, SinceFact: cur.fact, InstanceEpoch: epoch, EndAtHead: true})
			taken := 0
			for taken < stopAfter {
				m := st.next()
				if m.GetCaughtUp() != nil {
					break
				}
				if store.Durable && m.GetServerStatus() != nil && m.Seq == 0 {
					continue // the replica's status: it moves no cursor
				}
				cm := m.GetCommit()
				if cm == nil {
					t.Fatalf("unexpected %v", m)
				}
				for _, f := range cm.Facts {
					if f.Index >= cm.FactCount {
						t.Fatalf("fact index %d beyond fact_count %d", f.Index, cm.FactCount)
					}
					got = append(got, consumed{m.Seq, f.Index})
					taken++
					if f.Index+1 == cm.FactCount {
						cur.seq, cur.fact = m.Seq, 0
					} else {
						cur.seq, cur.fact = m.Seq, f.Index+1
					}
					if taken == stopAfter {
						break
					}
				}
			}
			st.close()
		}
		if len(got) != len(want) {
			t.Fatalf("consumed %d facts, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("fact %d: got %v, want %v (all: %v)", i, got[i], want[i], got)
			}
		}
	})
}

func TestPayloadsRoundTripUnchanged(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		data, _ := structpb.NewStruct(map[string]any{
			"level_m": 1.234, "name": "Ribble", "nested": map[string]any{"unknown_to_ringcast": []any{1.0, "x", nil, true}},
		})
		sent := []*ringcastv1.Fact{
			{Topic: "a/b", Type: "t.one", Key: "k1", Payload: &ringcastv1.Fact_Data{Data: data}},
			{Topic: "a/c", Type: "t.two", Payload: &ringcastv1.Fact_BinaryData{BinaryData: []byte{0, 1, 2, 0xff}}, ContentType: "application/octet-stream"},
		}
		want := make([]*ringcastv1.Fact, len(sent))
		for i, f := range sent {
			want[i] = proto.Clone(f).(*ringcastv1.Fact)
			want[i].Index = uint32(i)
		}
		seq := publish(t, c, sent...)
		got := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: seq - 1, InstanceEpoch: srv.Hub().Epoch(), EndAtHead: true}).rest())
		cm := got[0].GetCommit()
		if cm == nil || cm.FactCount != 2 || len(cm.Facts) != 2 {
			t.Fatalf("got %v", got[0])
		}
		for i := range want {
			if !proto.Equal(cm.Facts[i], want[i]) {
				t.Fatalf("fact %d = %v, want %v", i, cm.Facts[i], want[i])
			}
		}
	})
}

func TestFiltersDeliverMatchingFactsAndProgressCoversTheRest(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		epoch := srv.Hub().Epoch()
		lead := publish(t, c, fact("other", "", 0)) // a cursor before the mixed commit
		mixed := publish(t, c, fact("gauges/ribble/g-014", "", 0), fact("gauges/ribblesdale/g-1", "", 1), fact("gauges/ribble", "", 2), fact("gauges/lune/g-021", "", 3))
		publishN(t, c, "gauges/lune/g-021", 3)
		head := publishN(t, c, "other", 2)

		got := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: lead, InstanceEpoch: epoch, Topics: []string{"gauges/ribble"}, EndAtHead: true}).rest())
		seqs := positioned(t, store, got)
		if len(got) != 3 || got[0].Seq != mixed || got[1].GetProgress() == nil || got[1].Seq != head || !isCaughtUp(got[2]) {
			t.Fatalf("got %v (seqs %v), want commit %d, Progress %d, CaughtUp", got, seqs, mixed, head)
		}
		cm := got[0].GetCommit()
		if cm.FactCount != 4 || len(cm.Facts) != 2 || cm.Facts[0].Index != 0 || cm.Facts[1].Index != 2 {
			t.Fatalf("filtered commit = %v, want facts 0 and 2 of 4", cm)
		}
		// Resuming from the covered position is empty and gap-free.
		again := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: head, InstanceEpoch: epoch, Topics: []string{"gauges/ribble"}, EndAtHead: true}).rest())
		if len(again) != 1 || !isCaughtUp(again[0]) {
			t.Fatalf("resume from the covered seq: %v, want only CaughtUp", again)
		}
	})
}

// TestFilteredIdleSubscriberIsNotResynced: 10×W commits the filter skips
// pass a live subscriber; it is not cut — even when it is not scheduled
// until the ring has wrapped (on memory: nothing it would send left the
// ring; on a durable store it reads on from the stream, which here keeps
// them all) — and its last Progress is a cursor that resumes without a
// resync. A durable stream that has discarded the subscriber's position
// resyncs it whatever its filter (docs/protocol.md, "Stores").
func TestFilteredIdleSubscriberIsNotResynced(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Window = 16
		srv := store.Retaining(int64(20*cfg.Window)).Start(t, cfg)
		c := srv.Client(p)
		epoch := srv.Hub().Epoch()
		st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{Topics: []string{"wanted"}})
		st.until(isCaughtUp)
		head := publishN(t, c, "unrelated", 10*cfg.Window)
		wanted := publish(t, c, fact("wanted", "", 0))
		var cursor uint64
		for _, m := range st.until(func(m *ringcastv1.SubscribeEventsResponse) bool { return m.Seq == wanted }) {
			if m.GetResyncRequired() != nil {
				t.Fatalf("filtered subscriber resynced: %v", m)
			}
			if m.GetProgress() != nil {
				if m.Seq <= cursor {
					t.Fatalf("Progress %d after %d", m.Seq, cursor)
				}
				cursor = m.Seq
			}
		}
		if cursor == 0 || cursor > head {
			t.Fatalf("last Progress %d, want one in (0, %d]", cursor, head)
		}
		got := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: cursor, InstanceEpoch: epoch, Topics: []string{"wanted"}, EndAtHead: true}).rest()
		if got[0].GetResyncRequired() != nil || got[len(got)-2].Seq != wanted {
			t.Fatalf("resume from the last Progress: %v", got)
		}
	})
}

func TestBoundedReadsEndOK(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		epoch := srv.Hub().Epoch()
		lead := publish(t, c, fact("a/b", "", 0)) // a cursor before three
		three := publish(t, c, fact("a/b", "", 0), fact("a/b", "", 1), fact("a/b", "", 2))
		head := publishN(t, c, "a/b", 4)

		t.Run("until_seq inside the ring", func(t *testing.T) {
			got := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: lead, InstanceEpoch: epoch, UntilSeq: three}).rest())
			if seqs := positioned(t, store, got); !equalSeqs(seqs, []uint64{three}) || len(got[0].GetCommit().Facts) != 3 {
				t.Fatalf("got %v, want the whole commit %d and the end", got, three)
			}
		})
		t.Run("until_seq in the future waits for it", func(t *testing.T) {
			st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: head, InstanceEpoch: epoch, UntilSeq: head + 2})
			st.until(isCaughtUp)
			publishN(t, c, "a/b", 3)
			if seqs := positioned(t, store, st.rest()); !equalSeqs(seqs, span(head+1, head+2)) {
				t.Fatalf("seqs %v, want %d..%d", seqs, head+1, head+2)
			}
		})
		t.Run("until_seq with a filter ends on Progress", func(t *testing.T) {
			got := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: 1, InstanceEpoch: epoch, UntilSeq: head, Topics: []string{"x"}}).rest())
			if len(got) != 1 || got[0].GetProgress() == nil || got[0].Seq != head {
				t.Fatalf("got %v, want Progress(%d) then the end", got, head)
			}
		})
		t.Run("end_at_head", func(t *testing.T) {
			_, now := srv.Hub().Bounds()
			got := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: 1, InstanceEpoch: epoch, EndAtHead: true}).rest()
			if seqs := positioned(t, store, got); !isCaughtUp(got[len(got)-1]) || !equalSeqs(seqs, span(2, now)) {
				t.Fatalf("got %v, want replay then CaughtUp then the end", got)
			}
		})
	})
}

func TestConcurrentDuplicatePublishesAppendOnce(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		_, before := srv.Hub().Bounds()
		const n = 16
		receipts := make([]*ringcastv1.PublishResponse, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{
					Facts: []*ringcastv1.Fact{fact("a/b", "", 42)}, IdempotencyKey: "order-42",
				}))
				if err != nil {
					t.Error(err)
					return
				}
				receipts[i] = res.Msg
			})
		}
		wg.Wait()
		if _, head := srv.Hub().Bounds(); head != before+1 {
			t.Fatalf("head %d → %d, want exactly one append", before, head)
		}
		originals := 0
		for _, r := range receipts {
			if r.Seq != before+1 || r.InstanceEpoch != srv.Hub().Epoch() || !r.EventTime.AsTime().Equal(receipts[0].EventTime.AsTime()) {
				t.Fatalf("receipt %v differs from the original", r)
			}
			if !r.Duplicate {
				originals++
			}
		}
		if originals != 1 {
			t.Fatalf("%d receipts without duplicate=true, want 1", originals)
		}
		other := publish(t, c, fact("a/b", "", 0))
		if other != before+2 {
			t.Fatalf("a publish without the key got seq %d, want %d", other, before+2)
		}
	})
}
