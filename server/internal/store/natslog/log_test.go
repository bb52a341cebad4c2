package natslog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// embedded starts an in-process nats-server with JetStream file storage in
// dir and connects to it; both end with the test.
func embedded(t testing.TB, dir string) (*server.Server, *nats.Conn) {
	t.Helper()
	ns, err := natslog.StartServer(natslog.EmbeddedOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := natslog.ConnectEmbedded(ns)
	if err != nil {
		ns.Shutdown()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns, nc
}

func openLog(t testing.TB, nc *nats.Conn, opts natslog.Options) *natslog.Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := natslog.Open(ctx, nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newHub(t testing.TB, l hub.Log, window int) *hub.Hub {
	t.Helper()
	h, err := hub.New(hub.Config{Log: l, Window: window, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func fact(topic, key string, n int) *ringcastv1.Fact {
	s, _ := structpb.NewStruct(map[string]any{"n": float64(n)})
	return &ringcastv1.Fact{Topic: topic, Type: "test.fact", Key: key, Payload: &ringcastv1.Fact_Data{Data: s}}
}

func publish(t testing.TB, h *hub.Hub, key string, facts ...*ringcastv1.Fact) hub.Receipt {
	t.Helper()
	r, err := h.Publish(facts, key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type recorder struct {
	msgs []*ringcastv1.SubscribeEventsResponse
}

func (r *recorder) Send(m *ringcastv1.SubscribeEventsResponse) error {
	r.msgs = append(r.msgs, m)
	return nil
}

// run subscribes and waits for the stream to end; it returns the commit
// seqs after checking positioned seqs increase and statuses are unpositioned.
func run(t testing.TB, h *hub.Hub, req hub.Request) (commits []uint64, msgs []*ringcastv1.SubscribeEventsResponse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rec recorder
	if err := h.Subscribe(ctx, req, &rec); err != nil {
		t.Fatalf("Subscribe(%+v) = %v", req, err)
	}
	var last uint64
	for _, m := range rec.msgs {
		switch m.Event.(type) {
		case *ringcastv1.SubscribeEventsResponse_Commit, *ringcastv1.SubscribeEventsResponse_Progress:
			if m.Seq <= last {
				t.Fatalf("positioned seq %d after %d", m.Seq, last)
			}
			last = m.Seq
			if m.GetCommit() != nil {
				commits = append(commits, m.Seq)
			}
		default:
			if m.Seq != 0 {
				t.Fatalf("unpositioned %T with seq %d", m.Event, m.Seq)
			}
		}
	}
	return commits, rec.msgs
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func equal(a, b []uint64) bool {
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

// TestJetStreamSeqsAreStreamSequencesAndOldCursorsReplay: a commit's seq is
// its stream sequence; a cursor older than the ring is replayed from the
// stream; below the stream's first sequence it is CURSOR_TOO_OLD, with the
// stream's range reported.
func TestJetStreamSeqsAreStreamSequencesAndOldCursorsReplay(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{MaxMsgs: 30})
	h := newHub(t, l, 4)
	for i := range 40 {
		if r := publish(t, h, "", fact("t", "", i)); r.Seq != uint64(i+1) || r.Epoch != l.Epoch() {
			t.Fatalf("receipt %+v, want seq %d epoch %x", r, i+1, l.Epoch())
		}
	}
	commits, _ := run(t, h, hub.Request{SinceSeq: 12, Epoch: l.Epoch(), EndAtHead: true})
	if !equal(commits, seqRange(13, 40)) {
		t.Fatalf("since 12 (ring holds 37..40, stream 11..40): commits %v, want 13..40", commits)
	}
	_, msgs := run(t, h, hub.Request{SinceSeq: 9, Epoch: l.Epoch(), EndAtHead: true})
	rr := msgs[len(msgs)-1].GetResyncRequired()
	if rr.GetReason() != ringcastv1.Reason_REASON_CURSOR_TOO_OLD || rr.GetOldestSeq() != 11 || rr.GetHeadSeq() != 40 {
		t.Fatalf("since 9 below first 11: %v, want ResyncRequired(CURSOR_TOO_OLD, 11, 40)", msgs)
	}
	if st := h.Status(); st.OldestSeq != 11 || st.HeadSeq != 40 {
		t.Fatalf("status range [%d, %d], want the stream's [11, 40]", st.OldestSeq, st.HeadSeq)
	}
}

// TestJetStreamRestartKeepsEpochCursorsStateAndKeys: ringcast and the
// embedded nats-server stop and start again on the same data dir: the
// epoch is the same, a cursor resumes without a resync, LATEST_PER_KEY is
// rebuilt and an idempotency key still deduplicates.
func TestJetStreamRestartKeepsEpochCursorsStateAndKeys(t *testing.T) {
	dir := t.TempDir()
	var first hub.Receipt
	var epoch uint64
	{
		ns, nc := embedded(t, dir)
		l := openLog(t, nc, natslog.Options{})
		h, err := hub.New(hub.Config{Log: l, Window: 4, Lease: -1})
		if err != nil {
			t.Fatal(err)
		}
		first = publish(t, h, "k1", fact("g/a", "a", 1), fact("g/b", "b", 1))
		for i := range 6 {
			publish(t, h, "", fact("g/a", "a", 2+i))
		}
		epoch = h.Epoch()
		h.Drain()
		h.Close()
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	}
	_, nc := embedded(t, dir)
	l := openLog(t, nc, natslog.Options{})
	h := newHub(t, l, 4)
	if h.Epoch() != epoch {
		t.Fatalf("epoch %x after restart, want %x", h.Epoch(), epoch)
	}
	again := publish(t, h, "k1", fact("g/a", "a", 1), fact("g/b", "b", 1))
	if !again.Duplicate || again.Seq != first.Seq || !again.Time.Equal(first.Time) {
		t.Fatalf("retry after restart = %+v; want the original receipt %+v as a duplicate", again, first)
	}
	commits, _ := run(t, h, hub.Request{SinceSeq: 1, Epoch: epoch, EndAtHead: true})
	if !equal(commits, seqRange(2, 7)) {
		t.Fatalf("resume after restart: commits %v, want 2..7", commits)
	}
	_, msgs := run(t, h, hub.Request{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true})
	latest := map[string]float64{}
	for _, m := range msgs {
		for _, f := range m.GetCommit().GetFacts() {
			latest[f.Key] = f.GetData().Fields["n"].GetNumberValue()
		}
	}
	if len(latest) != 2 || latest["a"] != 7 || latest["b"] != 1 {
		t.Fatalf("latest per key after restart = %v, want a=7 b=1", latest)
	}
}

// TestReadsThroughCachedBlocksAreExact: cursors at every kind of offset
// around the stream's cached 1,024-commit blocks resume with exactly the
// commits after them, many at once (sharing blocks), then hand over to the
// ring.
func TestReadsThroughCachedBlocksAreExact(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{})
	h := newHub(t, l, 4)
	const total = 2100
	facts := make([][]*ringcastv1.Fact, total)
	for i := range facts {
		facts[i] = []*ringcastv1.Fact{fact("t", "", i)}
	}
	for i := range total {
		publish(t, h, "", facts[i]...)
	}
	since := []uint64{1, 2, 500, 1023, 1024, 1025, 1500, 2047, 2048, 2049, 2095}
	errs := make(chan error, len(since))
	for _, s := range since {
		go func() {
			commits, _ := run(t, h, hub.Request{SinceSeq: s, Epoch: l.Epoch(), EndAtHead: true})
			if !equal(commits, seqRange(s+1, total)) {
				errs <- fmt.Errorf("since %d: %d commits from %v, want %d..%d", s, len(commits), commits[:min(3, len(commits))], s+1, total)
				return
			}
			errs <- nil
		}()
	}
	for range since {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
