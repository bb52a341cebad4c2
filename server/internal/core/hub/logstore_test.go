package hub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

const testLogEpoch = 0x5eed

func newLogHub(t testing.TB, l hub.Log, window int) *hub.Hub {
	t.Helper()
	return newHub(t, hub.Config{Log: l, Window: window})
}

// commitSeqs checks a log-mode stream: statuses unpositioned (seq 0),
// positioned seqs strictly increasing; it returns the commit seqs.
func commitSeqs(t *testing.T, msgs []*ringcastv1.SubscribeEventsResponse) []uint64 {
	t.Helper()
	var last uint64
	var seqs []uint64
	for _, m := range msgs {
		switch m.Event.(type) {
		case *ringcastv1.SubscribeEventsResponse_Commit, *ringcastv1.SubscribeEventsResponse_Progress:
			if m.Seq <= last {
				t.Fatalf("positioned seq %d after %d", m.Seq, last)
			}
			last = m.Seq
			if m.GetCommit() != nil {
				seqs = append(seqs, m.Seq)
			}
		default:
			if m.Seq != 0 {
				t.Fatalf("unpositioned %T with seq %d", m.Event, m.Seq)
			}
		}
	}
	return seqs
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLogStoreResumesBelowTheRingFromTheLog: with a Log, a cursor older
// than the ring but held by the Log is replayed from the Log and handed to
// the ring with no gap and no duplicate; the stream starts with the
// replica's ServerStatus, unpositioned.
func TestLogStoreResumesBelowTheRingFromTheLog(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	h := newLogHub(t, l, 4)
	if h.Epoch() != testLogEpoch {
		t.Fatalf("epoch %x, want the log's", h.Epoch())
	}
	for i := range 20 {
		mustPublish(t, h, fact("t", "", i))
	}
	for _, since := range []uint64{0, 1, 2, 15, 16, 19, 20} {
		got := run(t, h, hub.Request{SinceSeq: since, Epoch: testLogEpoch, EndAtHead: true})
		if got[0].GetServerStatus().GetState() != ringcastv1.ServerState_SERVER_STATE_SERVING || got[0].Seq != 0 {
			t.Fatalf("since %d: first message %v, want an unpositioned SERVING status", since, got[0])
		}
		from := since + 1
		if since == 0 {
			from = 17 // a fresh snapshot is the ring's newest W
		}
		if seqs := commitSeqs(t, got); !equalSeqs(seqs, seqRange(from, 20)) {
			t.Fatalf("since %d: commits %v, want %d..20", since, seqs, from)
		}
		if cu := got[len(got)-1].GetCaughtUp(); cu == nil || cu.HeadSeq != 20 {
			t.Fatalf("since %d: last message %v, want CaughtUp(20)", since, got[len(got)-1])
		}
	}
}

// TestLogStoreCursorBelowTheLogsFirstSeqIsTooOld: CURSOR_TOO_OLD only when
// the cursor's next commit has left the Log, not the ring.
func TestLogStoreCursorBelowTheLogsFirstSeqIsTooOld(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	h := newLogHub(t, l, 4)
	for i := range 20 {
		mustPublish(t, h, fact("t", "", i))
	}
	l.trim(10)
	got := run(t, h, hub.Request{SinceSeq: 8, Epoch: testLogEpoch, EndAtHead: true})
	rr := got[len(got)-1].GetResyncRequired()
	if len(got) != 1 || rr.GetReason() != ringcastv1.Reason_REASON_CURSOR_TOO_OLD || rr.GetOldestSeq() != 10 || rr.GetHeadSeq() != 20 {
		t.Fatalf("since 8 below first 10: %v, want ResyncRequired(CURSOR_TOO_OLD, oldest 10, head 20)", got)
	}
	got = run(t, h, hub.Request{SinceSeq: 9, Epoch: testLogEpoch, EndAtHead: true})
	if seqs := commitSeqs(t, got); !equalSeqs(seqs, seqRange(10, 20)) {
		t.Fatalf("since 9: commits %v, want 10..20", seqs)
	}
	if st := h.Status(); st.OldestSeq != 10 || st.HeadSeq != 20 {
		t.Fatalf("status range [%d, %d], want the log's [10, 20]", st.OldestSeq, st.HeadSeq)
	}
}

// TestLogStoreCursorIsPortableAcrossReplicas: two hubs on one Log share
// the epoch and the seqs; a cursor from one resumes on the other, and a
// commit published through one reaches the other's live subscribers.
func TestLogStoreCursorIsPortableAcrossReplicas(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	a := newLogHub(t, l, 4)
	b := newLogHub(t, l, 4)
	for i := range 10 {
		mustPublish(t, a, fact("t", "", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := &recorder{}
	done := make(chan error, 1)
	go func() { done <- b.Subscribe(ctx, hub.Request{SinceSeq: 3, Epoch: a.Epoch(), UntilSeq: 12}, rec) }()
	mustPublish(t, b, fact("t", "", 10))
	mustPublish(t, a, fact("t", "", 11))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seqs := commitSeqs(t, rec.all()); !equalSeqs(seqs, seqRange(4, 12)) {
		t.Fatalf("cursor 3 from replica A on replica B: commits %v, want 4..12", seqs)
	}
}

// TestLogStoreRestartKeepsEpochCursorsStateAndKeys: a hub restarted on the
// same Log keeps the epoch, serves old cursors, rebuilds the latest-per-key
// table, and the Log still deduplicates idempotency keys.
func TestLogStoreRestartKeepsEpochCursorsStateAndKeys(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	h1, err := hub.New(hub.Config{Log: l, Window: 4, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	first, err := h1.Publish([]*ringcastv1.Fact{fact("g/a", "a", 1), fact("g/b", "b", 1)}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		mustPublish(t, h1, fact("g/a", "a", 2+i))
	}
	h1.Drain()
	h1.Close()

	h2 := newLogHub(t, l, 4)
	if h2.Epoch() != testLogEpoch {
		t.Fatalf("epoch changed across a restart")
	}
	again, err := h2.Publish([]*ringcastv1.Fact{fact("g/a", "a", 99)}, "k1")
	if err != nil || !again.Duplicate || again.Seq != first.Seq || !again.Time.Equal(first.Time) {
		t.Fatalf("retry after restart = %+v, %v; want the original receipt %+v as a duplicate", again, err, first)
	}
	got := run(t, h2, hub.Request{SinceSeq: 1, Epoch: testLogEpoch, EndAtHead: true})
	if seqs := commitSeqs(t, got); !equalSeqs(seqs, seqRange(2, 7)) {
		t.Fatalf("resume after restart: commits %v, want 2..7", seqs)
	}
	got = run(t, h2, hub.Request{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true})
	latest := map[string]float64{}
	for _, m := range got {
		for _, f := range m.GetCommit().GetFacts() {
			latest[f.Key] = f.GetData().Fields["n"].GetNumberValue()
		}
	}
	if len(latest) != 2 || latest["a"] != 7 || latest["b"] != 1 {
		t.Fatalf("latest per key after restart = %v, want a=7 b=1", latest)
	}
}

// TestLogStoreStreamBehindTheRingReadsOnFromTheLog: a stream that falls
// behind the ring is not cut (SUBSCRIBER_LAGGING) while the Log holds its
// position: it reads on from the Log.
func TestLogStoreStreamBehindTheRingReadsOnFromTheLog(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	h := newLogHub(t, l, 4)
	mustPublish(t, h, fact("t", "", 0))
	rec := &recorder{gate: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.Subscribe(ctx, hub.Request{SinceSeq: 1, Epoch: testLogEpoch, UntilSeq: 40}, rec) }()
	for i := range 39 {
		mustPublish(t, h, fact("t", "", i+1))
	}
	close(rec.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seqs := commitSeqs(t, rec.all()); !equalSeqs(seqs, seqRange(2, 40)) {
		t.Fatalf("commits %v, want 2..40", seqs)
	}
}

// TestLogStoreDrainTellsOwnStreamsThenEnds: a draining replica sends its
// streams its DRAINING status (unpositioned) and ends them at the head it
// had, while the other replica keeps serving.
func TestLogStoreDrainTellsOwnStreamsThenEnds(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	a := newLogHub(t, l, 8)
	b := newLogHub(t, l, 8)
	mustPublish(t, a, fact("t", "", 0))
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Subscribe(ctx, hub.Request{}, rec) }()
	a.Drain()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := rec.all()
	commitSeqs(t, got)
	last := got[len(got)-1].GetServerStatus()
	if last.GetState() != ringcastv1.ServerState_SERVER_STATE_DRAINING {
		t.Fatalf("last message %v, want this replica's DRAINING status", got[len(got)-1])
	}
	if _, err := a.Publish([]*ringcastv1.Fact{fact("t", "", 1)}, ""); err != hub.ErrDraining {
		t.Fatalf("publish on a draining replica: %v, want ErrDraining", err)
	}
	if seq := mustPublish(t, b, fact("t", "", 2)); seq != 2 {
		t.Fatalf("publish on the other replica: seq %d, want 2", seq)
	}
}

// TestLogStoreDeduplicatesByTheLogOnly: with a Log the hub keeps no dedupe
// table beside it. A key the Log has forgotten (its window passed) is new
// again on the replica that first published it, as on any other; a key the
// Log holds is a duplicate on every replica, with the original receipt; and
// a draining replica refuses a repeat like any publish (only the Log knows
// it), which another replica answers.
func TestLogStoreDeduplicatesByTheLogOnly(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	a, b := newLogHub(t, l, 16), newLogHub(t, l, 16)
	first, err := a.Publish([]*ringcastv1.Fact{fact("g/a", "a", 1)}, "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*hub.Hub{a, b} {
		r, err := h.Publish([]*ringcastv1.Fact{fact("g/a", "a", 2)}, "k")
		if err != nil || !r.Duplicate || r.Seq != first.Seq || !r.Time.Equal(first.Time) {
			t.Fatalf("retry = %+v, %v; want the original %+v as a duplicate", r, err, first)
		}
	}
	l.forget("k")
	r, err := a.Publish([]*ringcastv1.Fact{fact("g/a", "a", 3)}, "k")
	if err != nil || r.Duplicate || r.Seq != first.Seq+1 {
		t.Fatalf("a key the log forgot, on the replica that published it: %+v, %v; want a new commit at %d", r, err, first.Seq+1)
	}
	a.Drain()
	if _, err := a.Publish([]*ringcastv1.Fact{fact("g/a", "a", 4)}, "k"); err != hub.ErrDraining {
		t.Fatalf("repeat on a draining replica: %v, want ErrDraining", err)
	}
	if r, err := b.Publish([]*ringcastv1.Fact{fact("g/a", "a", 4)}, "k"); err != nil || !r.Duplicate || r.Seq != first.Seq+1 {
		t.Fatalf("repeat on the other replica: %+v, %v", r, err)
	}
}

// TestLogStoreReplacedLogDrainsAndReportsFailed: a Log that reports it was
// replaced makes the hub drain (its live streams end, publishes are
// refused) and report the error once on Failed.
func TestLogStoreReplacedLogDrainsAndReportsFailed(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	h := newLogHub(t, l, 16)
	mustPublish(t, h, fact("t", "", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	live := make(chan error, 1)
	go func() { live <- h.Subscribe(ctx, hub.Request{}, discard{}) }()
	l.replace()
	select {
	case err := <-h.Failed():
		if !errors.Is(err, hub.ErrLogReplaced) {
			t.Fatalf("Failed: %v, want ErrLogReplaced", err)
		}
	case <-ctx.Done():
		t.Fatal("the hub did not report its replaced log")
	}
	if err := <-live; err != nil {
		t.Fatalf("live stream ended with %v, want OK after DRAINING", err)
	}
	if _, err := h.Publish([]*ringcastv1.Fact{fact("t", "", 2)}, ""); !errors.Is(err, hub.ErrDraining) {
		t.Fatalf("publish: %v, want ErrDraining", err)
	}
}

type discard struct{}

func (discard) Send(*ringcastv1.SubscribeEventsResponse) error { return nil }
