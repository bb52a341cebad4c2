package natslog_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

func commit(key string, n int) hub.Commit {
	return hub.Commit{Facts: []*ringcastv1.Fact{fact("t", "", n)}, IdempotencyKey: key}
}

func publishBatch(t testing.TB, h *hub.Hub, commits ...hub.Commit) []hub.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := h.PublishBatch(ctx, commits)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(commits) {
		t.Fatalf("%d receipts for %d commits", len(rs), len(commits))
	}
	return rs
}

func lastSeq(t testing.TB, l *natslog.Log) uint64 {
	t.Helper()
	info, err := l.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// commitValues reads the commits after seq as their facts' "n".
func commitValues(t testing.TB, h *hub.Hub, epoch, after uint64) map[uint64]int {
	t.Helper()
	_, msgs := run(t, h, hub.Request{SinceSeq: after, Epoch: epoch, EndAtHead: true})
	got := map[uint64]int{}
	for _, m := range msgs {
		if c := m.GetCommit(); c != nil {
			got[m.Seq] = int(c.Facts[0].GetData().Fields["n"].GetNumberValue())
		}
	}
	return got
}

// TestPublishBatchOnJetStreamIsOrderedAndDeduplicatedOneByOne: a batch's
// new commits get consecutive stream sequences in request order; a key
// seen before the batch, or earlier in it, gets the original receipt; a
// batch retried whole is all duplicates with the original receipts, and a
// batch that repeats some keys appends only the others.
func TestPublishBatchOnJetStreamIsOrderedAndDeduplicatedOneByOne(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{})
	h := newHub(t, l, 64)
	old := publish(t, h, "old", fact("t", "", 0))
	batch := []hub.Commit{commit("new", 1), commit("old", 0), commit("", 3), commit("new", 1), commit("", 5)}
	rs := publishBatch(t, h, batch...)
	want := []hub.Receipt{
		{Seq: 2, Time: rs[0].Time},
		{Seq: 1, Time: old.Time, Duplicate: true},
		{Seq: 3, Time: rs[0].Time},
		{Seq: 2, Time: rs[0].Time, Duplicate: true},
		{Seq: 4, Time: rs[0].Time},
	}
	for i, w := range want {
		if r := rs[i]; r.Seq != w.Seq || r.Duplicate != w.Duplicate || !r.Time.Equal(w.Time) || r.Epoch != l.Epoch() {
			t.Fatalf("receipt %d = %+v, want %+v", i, r, w)
		}
	}
	if got := commitValues(t, h, l.Epoch(), 1); len(got) != 3 || got[2] != 1 || got[3] != 3 || got[4] != 5 {
		t.Fatalf("stored commits %v, want 2:1 3:3 4:5", got)
	}
	// Retried: the keyed commits are duplicates, the others new.
	again := publishBatch(t, h, batch...)
	wantAgain := []struct {
		seq uint64
		dup bool
	}{{2, true}, {1, true}, {5, false}, {2, true}, {6, false}}
	for i, w := range wantAgain {
		if again[i].Seq != w.seq || again[i].Duplicate != w.dup || (w.dup && !again[i].Time.Equal(want[i].Time)) {
			t.Fatalf("retried batch receipt %d = %+v, want seq %d duplicate %v", i, again[i], w.seq, w.dup)
		}
	}
	// Retried whole with keys on every commit: all duplicates, nothing appended.
	keyed := []hub.Commit{commit("a", 10), commit("b", 11), commit("c", 12)}
	first := publishBatch(t, h, keyed...)
	head := lastSeq(t, l)
	retry := publishBatch(t, h, keyed...)
	for i := range keyed {
		if !retry[i].Duplicate || retry[i].Seq != first[i].Seq || !retry[i].Time.Equal(first[i].Time) {
			t.Fatalf("retry %d = %+v, want a duplicate of %+v", i, retry[i], first[i])
		}
	}
	if lastSeq(t, l) != head {
		t.Fatalf("a retried batch appended: last seq %d, want %d", lastSeq(t, l), head)
	}
	// Some keys seen, some new: the new ones are appended, in order.
	mixed := publishBatch(t, h, commit("d", 13), commit("b", 11), commit("e", 15), commit("", 16))
	if mixed[0].Seq != head+1 || mixed[0].Duplicate || !mixed[1].Duplicate || mixed[1].Seq != first[1].Seq ||
		mixed[2].Seq != head+2 || mixed[2].Duplicate || mixed[3].Seq != head+3 || mixed[3].Duplicate {
		t.Fatalf("mixed batch receipts %+v, want %d, dup %d, %d, %d", mixed, head+1, first[1].Seq, head+2, head+3)
	}
	if got := commitValues(t, h, l.Epoch(), head); len(got) != 3 || got[head+1] != 13 || got[head+2] != 15 || got[head+3] != 16 {
		t.Fatalf("stored commits %v after the mixed batch", got)
	}
}

// TestPublishBatchOnJetStreamIsAllOrNone: a batch one of whose commits
// JetStream refuses (larger than the stream's message limit) appends none
// of them, and is refused as too large (a permanent refusal, not
// unavailable), wherever the commit is in the batch; concurrent batches
// never interleave.
func TestPublishBatchOnJetStreamIsAllOrNone(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "small", Subjects: []string{natslog.Subject("small")}, MaxMsgSize: 512,
		AllowAtomicPublish: true, AllowDirect: true, Duplicates: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, nc, natslog.Options{Stream: "small"})
	h := newHub(t, l, 64)
	big := hub.Commit{Facts: []*ringcastv1.Fact{fact("t", strings.Repeat("k", 600), 1)}}
	for _, at := range []int{0, 1, 2} { // first, middle, the commit message
		batch := []hub.Commit{commit("x", 1), commit("", 2), commit("", 3)}
		batch[at] = big
		if _, err := h.PublishBatch(ctx, batch); !errors.Is(err, hub.ErrCommitTooLarge) || errors.Is(err, hub.ErrUnavailable) {
			t.Fatalf("batch with a too large commit at %d: err %v, want ErrCommitTooLarge", at, err)
		}
		if n := lastSeq(t, l); n != 0 {
			t.Fatalf("batch with a too large commit at %d appended: last seq %d", at, n)
		}
	}
	// The refused batch's key was not taken.
	if rs := publishBatch(t, h, commit("x", 1), commit("", 2)); rs[0].Duplicate || rs[0].Seq != 1 || rs[1].Seq != 2 {
		t.Fatalf("receipts %+v, want 1 and 2", rs)
	}
	var wg sync.WaitGroup
	results := make([][]hub.Receipt, 4)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch []hub.Commit
			for i := range 20 {
				batch = append(batch, commit("", g*100+i))
			}
			results[g], _ = h.PublishBatch(ctx, batch)
		}()
	}
	wg.Wait()
	for g, rs := range results {
		if len(rs) != 20 {
			t.Fatalf("concurrent batch %d: %d receipts", g, len(rs))
		}
		for i := range rs {
			if rs[i].Seq != rs[0].Seq+uint64(i) {
				t.Fatalf("concurrent batch %d: seqs %+v not consecutive", g, rs)
			}
		}
	}
}

// TestPublishBatchOnAStreamWithoutAtomicPublish: a stream created without
// atomic publish answers a batch with ErrBatchUnsupported saying what to
// change, appends nothing, and still takes a batch of one.
func TestPublishBatchOnAStreamWithoutAtomicPublish(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "plain", Subjects: []string{natslog.Subject("plain")}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, nc, natslog.Options{Stream: "plain"})
	h := newHub(t, l, 64)
	_, err = h.PublishBatch(ctx, []hub.Commit{commit("", 1), commit("", 2)})
	if !errors.Is(err, hub.ErrBatchUnsupported) || errors.Is(err, hub.ErrUnavailable) || !strings.Contains(err.Error(), "allow_atomic") {
		t.Fatalf("err %v, want ErrBatchUnsupported naming allow_atomic", err)
	}
	if n := lastSeq(t, l); n != 0 {
		t.Fatalf("appended %d", n)
	}
	if rs := publishBatch(t, h, commit("", 1)); rs[0].Seq != 1 {
		t.Fatalf("a batch of one: %+v", rs)
	}
	// Allowed on the stream later: batches work without a restart.
	if _, err := js.UpdateStream(ctx, jetstream.StreamConfig{Name: "plain", Subjects: []string{natslog.Subject("plain")}, AllowDirect: true, AllowAtomicPublish: true}); err != nil {
		t.Fatal(err)
	}
	if rs := publishBatch(t, h, commit("", 2), commit("", 3)); rs[0].Seq != 2 || rs[1].Seq != 3 {
		t.Fatalf("after allowing atomic publish: %+v", rs)
	}
}

// TestGoClientPublishBatchOnTheEmbeddedStore: the Go client's PublishBatch
// through a replica on the embedded store gets one receipt per commit,
// consecutive, and a retry on another replica gets the same receipts as
// duplicates.
func TestGoClientPublishBatchOnTheEmbeddedStore(t *testing.T) {
	ns, _ := embedded(t, t.TempDir())
	a, b := replicaServer(t, ns, 0), replicaServer(t, ns, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ca, cb := ringcast.NewClient(a.URL), ringcast.NewClient(b.URL)
	defer ca.CloseIdleConnections()
	defer cb.CloseIdleConnections()
	batch := []*ringcastv1.PublishRequest{
		{Facts: []*ringcastv1.Fact{fact("g/a", "k", 1)}, IdempotencyKey: "p1"},
		{Facts: []*ringcastv1.Fact{fact("g/a", "k", 2)}},
		{Facts: []*ringcastv1.Fact{fact("g/a", "k", 3)}, IdempotencyKey: "p3"},
	}
	rs, err := ca.PublishBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[1].Seq != rs[0].Seq+1 || rs[2].Seq != rs[0].Seq+2 || rs[0].Duplicate {
		t.Fatalf("receipts %v, want three consecutive seqs", rs)
	}
	again, err := cb.PublishBatch(ctx, []*ringcastv1.PublishRequest{batch[0], batch[2]})
	if err != nil {
		t.Fatal(err)
	}
	if !again[0].Duplicate || again[0].Seq != rs[0].Seq || !again[1].Duplicate || again[1].Seq != rs[2].Seq ||
		!again[0].EventTime.AsTime().Equal(rs[0].EventTime.AsTime()) {
		t.Fatalf("retry on B: %v, want duplicates of %v", again, rs)
	}
}

// TestARetriedBatchReadsTheWindowOnlyAsFarAsItsKeys: a batch repeating a
// key published just before it, beside a new key, reads one chunk of the
// stream back (JetStream then says the new key is not in its window), not
// the whole duplicate window; a key deep in the window, beside a new one,
// is still found with its original receipt, by reading back as far as it
// is and no further.
func TestARetriedBatchReadsTheWindowOnlyAsFarAsItsKeys(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{})
	h := newHub(t, l, 16)
	deep := publish(t, h, "deep", fact("t", "", 0))
	for range 3 {
		var batch []hub.Commit
		for i := range 500 {
			batch = append(batch, commit("", i))
		}
		publishBatch(t, h, batch...)
	}
	recent := publish(t, h, "recent", fact("t", "", 1))
	gets, _ := l.DirectGets()
	rs := publishBatch(t, h, commit("recent", 1), commit("new1", 3))
	if !rs[0].Duplicate || rs[0].Seq != recent.Seq || rs[1].Duplicate || rs[1].Seq != recent.Seq+1 {
		t.Fatalf("receipts %+v, want a duplicate of %d and %d", rs, recent.Seq, recent.Seq+1)
	}
	if now, _ := l.DirectGets(); now-gets != 1 {
		t.Fatalf("looking up a key just published took %d direct gets, want 1 (of %d commits)", now-gets, recent.Seq)
	}
	gets, _ = l.DirectGets()
	head := lastSeq(t, l)
	rs = publishBatch(t, h, commit("new2", 4), commit("deep", 0))
	if rs[0].Duplicate || rs[0].Seq != recent.Seq+2 || !rs[1].Duplicate || rs[1].Seq != deep.Seq || !rs[1].Time.Equal(deep.Time) {
		t.Fatalf("receipts %+v, want %d and a duplicate of %+v", rs, recent.Seq+2, deep)
	}
	// Read back to the deep key, a chunk of 256 at a time, and no further.
	if now, _ := l.DirectGets(); now-gets != (head+255)/256 {
		t.Fatalf("looking up a key %d commits deep took %d direct gets, want %d", head, now-gets, (head+255)/256)
	}
}

// TestABatchRepeatingAKeyWhoseOriginalWasDiscarded: the stream's limits
// discarded a key's original, but the key is still in JetStream's
// duplicate window. A batch repeating it beside a new key answers it as a
// Publish does — a duplicate with the original's seq and the retry's time
// — and appends the new commit alone; retried whole, the batch appends
// nothing.
func TestABatchRepeatingAKeyWhoseOriginalWasDiscarded(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{MaxMsgs: 4})
	h := newHub(t, l, 16)
	k := publish(t, h, "k", fact("t", "", 0))
	for i := range 4 {
		publish(t, h, "", fact("t", "", i+1))
	}
	if r := publish(t, h, "k", fact("t", "", 9)); !r.Duplicate || r.Seq != k.Seq {
		t.Fatalf("Publish of the discarded key = %+v, want a duplicate of seq %d", r, k.Seq)
	}
	rs := publishBatch(t, h, commit("k", 10), commit("new", 11))
	if !rs[0].Duplicate || rs[0].Seq != k.Seq || rs[1].Duplicate || rs[1].Seq != 6 {
		t.Fatalf("receipts %+v, want a duplicate of seq %d and seq 6", rs, k.Seq)
	}
	if rs[0].Time.Equal(k.Time) {
		t.Fatalf("the discarded original's time %v came back: it is gone with the message", k.Time)
	}
	again := publishBatch(t, h, commit("k", 10), commit("new", 11))
	if !again[0].Duplicate || again[0].Seq != k.Seq || !again[1].Duplicate || again[1].Seq != 6 || !again[1].Time.Equal(rs[1].Time) {
		t.Fatalf("retried batch %+v, want duplicates of %+v", again, rs)
	}
	if n := lastSeq(t, l); n != 6 {
		t.Fatalf("last seq %d, want 6", n)
	}
}
