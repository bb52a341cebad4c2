package rpc_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestLeaseEndsStreamOKAndResumeLosesNothing: a stream ends with OK status
// when its lease expires mid-tail; resuming with the cursor gets exactly
// what was published meanwhile.
func TestLeaseEndsStreamOKAndResumeLosesNothing(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Lease = 300 * time.Millisecond
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		epoch := srv.Hub().Epoch()
		st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{})
		got := st.until(isCaughtUp)
		first := publish(t, c, fact("a/b", "", 0))
		got = append(got, st.rest()...) // ends OK by itself at the lease
		seqs := positioned(t, store, got)
		cursor := seqs[len(seqs)-1]
		if cursor != first {
			t.Fatalf("stream delivered %v before its lease ended, want up to %d", seqs, first)
		}
		more := publishN(t, c, "a/b", 3)
		resumed := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: cursor, InstanceEpoch: epoch, EndAtHead: true}).rest()
		if s := positioned(t, store, resumed); !equalSeqs(s, span(first+1, more)) {
			t.Fatalf("resume after lease: %v, want %d..%d", s, first+1, more)
		}
	})
}

// TestDrainPublishesDrainingAndEndsStreamsOK: shutdown publishes
// ServerStatus(DRAINING) into the ring, every stream receives it and ends
// with OK status. On a durable store the status is the replica's,
// unpositioned, and the last message of each stream.
func TestDrainPublishesDrainingAndEndsStreamsOK(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		head := publishN(t, c, "a/b", 2)
		st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: head, InstanceEpoch: srv.Hub().Epoch()})
		st.until(isCaughtUp)
		stopped := make(chan struct{})
		go func() { srv.Stop(); close(stopped) }()
		got := st.rest()
		at := head + 1
		if store.Durable {
			at = 0
		}
		if len(got) != 1 || got[0].Seq != at || got[0].GetServerStatus().GetState() != ringcastv1.ServerState_SERVER_STATE_DRAINING {
			t.Fatalf("got %v, want ServerStatus(DRAINING) at seq %d then an OK end", got, at)
		}
		ringtest.Wait(t, stopped, 10*time.Second, "server stop")
	})
}

func TestLatestPerKeySnapshot(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Window = 8
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		// k1 and k2 are set early; their last updates leave the ring.
		s1 := publish(t, c, fact("g/a", "k1", 1), fact("g/b", "k2", 1), fact("g/a", "", 0))
		s2 := publish(t, c, fact("g/a", "k1", 2))
		publishN(t, c, "noise", 10)
		s3 := publish(t, c, fact("g/b", "k3", 3), fact("g/b", "k3", 4))
		head := publish(t, c, fact("noise", "", 0))
		waitOldest(t, srv, head-7) // the ring (the stream on a durable store) holds W = 8
		if oldest, _ := srv.Hub().Bounds(); oldest <= s2 {
			t.Fatalf("setup: oldest %d should be past %d", oldest, s2)
		}
		got := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true}).rest()
		seqs := positioned(t, store, got)
		// The bind status (seq 1 on memory, unpositioned on a durable
		// store) is the latest status; then k2@s1, k1@s2, k3@s3 (its second
		// fact), Progress to head, CaughtUp.
		if !equalSeqs(seqs, bound(store, s1, s2, s3, head)) {
			t.Fatalf("positioned seqs %v, want %v", seqs, bound(store, s1, s2, s3, head))
		}
		check := func(m *ringcastv1.SubscribeEventsResponse, key string, index, count uint32) {
			t.Helper()
			cm := m.GetCommit()
			if cm == nil || len(cm.Facts) != 1 || cm.Facts[0].Key != key || cm.Facts[0].Index != index || cm.FactCount != count {
				t.Fatalf("got %v, want only %s (index %d of %d)", m, key, index, count)
			}
		}
		check(got[1], "k2", 1, 3)
		check(got[2], "k1", 0, 1)
		check(got[3], "k3", 1, 2)
		if got[4].GetProgress() == nil || !isCaughtUp(got[5]) || got[5].GetCaughtUp().HeadSeq != head {
			t.Fatalf("tail of snapshot %v, want Progress(%d) then CaughtUp(%d)", got[4:], head, head)
		}
		filtered := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, Topics: []string{"g/b"}, EndAtHead: true}).rest()
		if s := positioned(t, store, filtered); !equalSeqs(s, bound(store, s1, s3, head)) {
			t.Fatalf("filtered snapshot seqs %v", s)
		}
	})
}

// TestSnapshotInlineGapThenSnapshotThenLive: with SNAPSHOT_INLINE an
// unservable cursor gets Gap, the snapshot, CaughtUp and the live tail on
// the same stream.
func TestSnapshotInlineGapThenSnapshotThenLive(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		publish(t, c, fact("g/a", "k1", 1))
		head := publishN(t, c, "g/a", 2)
		st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{
			SinceSeq: 5, InstanceEpoch: 12345, // another instance's cursor
			Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, OnUnservable: ringcastv1.OnUnservable_ON_UNSERVABLE_SNAPSHOT_INLINE,
		})
		got := st.until(isCaughtUp)
		gap := got[0].GetGap()
		if gap == nil || got[0].Seq != 0 || gap.Reason != ringcastv1.Reason_REASON_EPOCH_MISMATCH || gap.RequestedSeq != 5 || gap.HeadSeq != head || gap.OldestSeq != 1 {
			t.Fatalf("first message %v, want Gap(EPOCH_MISMATCH, requested 5, oldest 1, head %d)", got[0], head)
		}
		// The latest status (seq 1 on memory; after the Gap, unpositioned,
		// on a durable store), k1's commit, Progress to head.
		want := bound(store, store.FirstCommit(), head)
		if s := positioned(t, store, afterStatus(t, store, got[1:])); !equalSeqs(s, want) {
			t.Fatalf("inline snapshot seqs %v, want %v", s, want)
		}
		live := publish(t, c, fact("g/a", "k1", 2))
		if m := st.next(); m.Seq != live {
			t.Fatalf("after the inline snapshot got %v, want live %d", m, live)
		}
	})
}

func TestIdleStreamsGetHeartbeats(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Heartbeat = 100 * time.Millisecond
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		st := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{})
		st.until(isCaughtUp)
		// Memory holds the bind status at 1; an empty stream's range is
		// [1, 0] (first = last+1).
		head := uint64(1)
		if store.Durable {
			head = 0
		}
		for range 2 {
			m := st.next()
			hb := m.GetHeartbeat()
			if hb == nil || m.Seq != 0 || hb.HeadSeq != head || hb.OldestSeq != 1 {
				t.Fatalf("idle stream got %v, want Heartbeat(head %d, oldest 1)", m, head)
			}
		}
	})
}

// TestLappedReaderOverTheWireGetsLagging: a client that stops reading while
// far more than W large commits are published sees, once it reads again,
// a gap-free prefix and then ResyncRequired(SUBSCRIBER_LAGGING).
func TestLappedReaderOverTheWireGetsLagging(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Window = 8
		cfg.WriteTimeout = time.Minute // this reader is slow, not gone
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		st := subscribe(t, smallBufferClient(srv.URL, p), &ringcastv1.SubscribeEventsRequest{})
		st.until(isCaughtUp)
		// 70 commits of 4×60 KiB (16 MiB): the server blocks once the
		// socket buffers and flow-control windows (< 9 MiB) are full,
		// holding at most one batch of events; far more than W commits are
		// published behind it. Few large commits keep a durable store's
		// appends (one round trip each) few.
		big := randomBytes(60 << 10) // under max-fact-bytes
		for range 70 {
			facts := make([]*ringcastv1.Fact, 4)
			for i := range facts {
				facts[i] = fact("a/b", "", 0)
				facts[i].Payload = &ringcastv1.Fact_BinaryData{BinaryData: big}
			}
			publish(t, c, facts...)
		}
		got := st.rest()
		last := got[len(got)-1]
		if last.GetResyncRequired().GetReason() != ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING {
			t.Fatalf("last message %v, want ResyncRequired(SUBSCRIBER_LAGGING)", last)
		}
		seqs := positioned(t, store, got)
		for i, s := range seqs {
			if s != uint64(i)+store.FirstCommit() {
				t.Fatalf("delivered %v: gap before the resync", seqs)
			}
		}
	})
}

// TestReaderThatStopsReadingIsCutWithoutSlowingOthers: a subscriber that
// never reads is cut after the write timeout; a healthy subscriber keeps
// receiving everything meanwhile.
func TestReaderThatStopsReadingIsCutWithoutSlowingOthers(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.Window = 4096
		// The write timeout holds for every response, the publisher's and
		// the healthy subscriber's too: on a busy machine their writes
		// (handed to a connection's writer goroutine) may wait on the
		// scheduler for a good part of a second, and a shorter timeout
		// cut them. The stuck reader's write blocks for good, whatever
		// the timeout.
		cfg.WriteTimeout = 3 * time.Second
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		stuck := subscribe(t, smallBufferClient(srv.URL, p), &ringcastv1.SubscribeEventsRequest{})
		stuck.until(isCaughtUp)
		healthy := subscribe(t, srv.Client(p), &ringcastv1.SubscribeEventsRequest{})
		healthy.until(isCaughtUp)
		big := randomBytes(60 << 10) // under max-fact-bytes
		var last uint64
		for range 48 { // 11 MiB: more than the stuck reader's buffers hold
			facts := make([]*ringcastv1.Fact, 4)
			for i := range facts {
				facts[i] = fact("a/b", "", 0)
				facts[i].Payload = &ringcastv1.Fact_BinaryData{BinaryData: big}
			}
			last = publish(t, c, facts...)
			if m := healthy.next(); m.Seq != last {
				t.Fatalf("healthy subscriber got %v, want %d", m.Seq, last)
			}
		}
		deadline := time.Now().Add(60 * time.Second) // a hang guard only
		for srv.Hub().Subscribers() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%d subscribers after the write timeout, want the stuck one cut", srv.Hub().Subscribers())
			}
			time.Sleep(20 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := c.GetServerStatus(ctx, connect.NewRequest(&ringcastv1.GetServerStatusRequest{}))
		if err != nil {
			t.Fatalf("server unhealthy after cutting a stuck reader: %v", err)
		}
	})
}

// randomBytes returns n incompressible bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
