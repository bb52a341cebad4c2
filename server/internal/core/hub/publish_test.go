package hub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

func TestPublishBatchAppendsInOrderWithOneReceiptPerCommit(t *testing.T) {
	h := newHub(t, hub.Config{Window: 64})
	_, before := h.Bounds()
	commits := []hub.Commit{
		{Facts: []*ringcastv1.Fact{fact("a/b", "k1", 1), fact("a/c", "k2", 2)}},
		{Facts: []*ringcastv1.Fact{fact("a/b", "", 3)}, IdempotencyKey: "x"},
		{Facts: []*ringcastv1.Fact{fact("a/d", "", 4)}},
	}
	rs, err := h.PublishBatch(context.Background(), commits)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d receipts, want 3", len(rs))
	}
	for i, r := range rs {
		if r.Seq != before+1+uint64(i) || r.Epoch != h.Epoch() || r.Duplicate {
			t.Fatalf("receipt %d = %+v, want seq %d", i, r, before+1+uint64(i))
		}
	}
	msgs := run(t, h, hub.Request{SinceSeq: before, Epoch: h.Epoch(), EndAtHead: true})
	var got [][]uint32
	for _, m := range msgs {
		if c := m.GetCommit(); c != nil {
			var idx []uint32
			for _, f := range c.Facts {
				idx = append(idx, f.Index)
			}
			got = append(got, idx)
		}
	}
	if len(got) != 3 || len(got[0]) != 2 || got[0][1] != 1 || got[1][0] != 0 || got[2][0] != 0 {
		t.Fatalf("commits' fact indexes %v, want [[0 1] [0] [0]]", got)
	}
}

func TestPublishBatchDeduplicatesEachCommit(t *testing.T) {
	h := newHub(t, hub.Config{Window: 64})
	first, err := h.Publish([]*ringcastv1.Fact{fact("a/b", "", 0)}, "old")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := h.PublishBatch(context.Background(), []hub.Commit{
		{Facts: []*ringcastv1.Fact{fact("a/b", "", 1)}, IdempotencyKey: "new"},
		{Facts: []*ringcastv1.Fact{fact("a/b", "", 0)}, IdempotencyKey: "old"}, // seen before the batch
		{Facts: []*ringcastv1.Fact{fact("a/b", "", 1)}, IdempotencyKey: "new"}, // seen earlier in the batch
		{Facts: []*ringcastv1.Fact{fact("a/b", "", 4)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []hub.Receipt{
		{Seq: first.Seq + 1, Epoch: h.Epoch(), Time: rs[0].Time},
		{Seq: first.Seq, Epoch: h.Epoch(), Time: first.Time, Duplicate: true},
		{Seq: first.Seq + 1, Epoch: h.Epoch(), Time: rs[0].Time, Duplicate: true},
		{Seq: first.Seq + 2, Epoch: h.Epoch(), Time: rs[0].Time},
	}
	for i := range want {
		if !rs[i].Time.Equal(want[i].Time) || rs[i].Seq != want[i].Seq || rs[i].Duplicate != want[i].Duplicate {
			t.Fatalf("receipt %d = %+v, want %+v", i, rs[i], want[i])
		}
	}
	if _, head := h.Bounds(); head != first.Seq+2 {
		t.Fatalf("head %d, want %d (two commits appended)", head, first.Seq+2)
	}
	// A later retry of a key first seen in a batch is a duplicate too.
	r, err := h.Publish([]*ringcastv1.Fact{fact("a/b", "", 1)}, "new")
	if err != nil || !r.Duplicate || r.Seq != first.Seq+1 {
		t.Fatalf("retry: %+v, %v", r, err)
	}
}

func TestPublishBatchWhileDrainingAppendsNothing(t *testing.T) {
	h := newHub(t, hub.Config{Window: 64})
	done, err := h.Publish([]*ringcastv1.Fact{fact("a/b", "", 0)}, "done")
	if err != nil {
		t.Fatal(err)
	}
	h.Drain()
	_, head := h.Bounds()
	_, err = h.PublishBatch(context.Background(), []hub.Commit{
		{Facts: []*ringcastv1.Fact{fact("a/b", "", 0)}, IdempotencyKey: "done"},
		{Facts: []*ringcastv1.Fact{fact("a/b", "", 2)}},
	})
	if !errors.Is(err, hub.ErrDraining) {
		t.Fatalf("err %v, want ErrDraining", err)
	}
	if _, now := h.Bounds(); now != head {
		t.Fatalf("head moved %d → %d", head, now)
	}
	// All duplicates: the receipts, even while draining.
	rs, err := h.PublishBatch(context.Background(), []hub.Commit{{Facts: []*ringcastv1.Fact{fact("a/b", "", 0)}, IdempotencyKey: "done"}})
	if err != nil || len(rs) != 1 || !rs[0].Duplicate || rs[0].Seq != done.Seq {
		t.Fatalf("duplicates while draining: %+v, %v", rs, err)
	}
}

// batchSliceLog is a sliceLog that appends a batch atomically.
type batchSliceLog struct{ *sliceLog }

func (l batchSliceLog) AppendBatch(ctx context.Context, at time.Time, commits []hub.Commit) ([]hub.Receipt, error) {
	// sliceLog's lock is not reentrant; Append one by one is atomic enough
	// for a test with a single publisher.
	rs := make([]hub.Receipt, len(commits))
	for i, c := range commits {
		r, err := l.Append(ctx, at, c)
		if err != nil {
			return nil, err
		}
		rs[i] = r
	}
	return rs, nil
}

func TestPublishBatchWithALog(t *testing.T) {
	one := func(n int) []*ringcastv1.Fact { return []*ringcastv1.Fact{fact("a/b", "", n)} }
	t.Run("without AppendBatch", func(t *testing.T) {
		h := newLogHub(t, newSliceLog(testLogEpoch), 16)
		if _, err := h.PublishBatch(context.Background(), []hub.Commit{{Facts: one(1)}, {Facts: one(2)}}); !errors.Is(err, hub.ErrBatchUnsupported) {
			t.Fatalf("err %v, want ErrBatchUnsupported", err)
		}
		rs, err := h.PublishBatch(context.Background(), []hub.Commit{{Facts: one(1)}})
		if err != nil || len(rs) != 1 || rs[0].Seq != 1 || rs[0].Epoch != testLogEpoch {
			t.Fatalf("a batch of one: %+v, %v", rs, err)
		}
	})
	t.Run("with AppendBatch", func(t *testing.T) {
		h := newLogHub(t, batchSliceLog{newSliceLog(testLogEpoch)}, 16)
		rs, err := h.PublishBatch(context.Background(), []hub.Commit{{Facts: one(1), IdempotencyKey: "k"}, {Facts: one(2)}, {Facts: one(3), IdempotencyKey: "k"}})
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].Seq != 1 || rs[1].Seq != 2 || rs[2].Seq != 1 || !rs[2].Duplicate || rs[0].Epoch != testLogEpoch {
			t.Fatalf("receipts %+v", rs)
		}
		// The hub holds the commits once the receipts are back.
		msgs := run(t, h, hub.Request{SinceSeq: 0, EndAtHead: true})
		if seqs := commitSeqs(t, msgs); !equalSeqs(seqs, seqRange(1, 2)) {
			t.Fatalf("commits %v, want [1 2]", seqs)
		}
	})
}
