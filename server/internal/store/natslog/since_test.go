package natslog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestSeqAtTimeUsesTheStreamsTimeLookup: SeqAtTime finds the first commit
// whose event time is at or after a time — exactly at a commit's time,
// between two, before everything (seq 1), after the head (last+1) — and
// steps over a commit stored after the time but stamped before it. Once
// the stream's limits discarded commits at or after the time, ErrTooOld.
func TestSeqAtTimeUsesTheStreamsTimeLookup(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{MaxMsgs: 6})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	appendAt := func(at time.Time) hub.Receipt {
		t.Helper()
		r, err := l.Append(ctx, at, hub.Commit{Facts: []*ringcastv1.Fact{fact("t", "", 0)}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	seqAt := func(at time.Time) uint64 {
		t.Helper()
		seq, err := l.SeqAtTime(ctx, at)
		if err != nil {
			t.Fatalf("SeqAtTime(%v): %v", at, err)
		}
		return seq
	}
	c1 := appendAt(time.Now())
	c2 := appendAt(time.Now())
	c3 := appendAt(time.Now())
	for _, tc := range []struct {
		name string
		at   time.Time
		want uint64
	}{
		{"at a commit's time", c2.Time, c2.Seq},
		{"between two commits", c1.Time.Add(time.Nanosecond), c2.Seq},
		{"before everything", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), 1},
		{"after the head", c3.Time.Add(time.Hour), c3.Seq + 1},
	} {
		if got := seqAt(tc.at); got != tc.want {
			t.Errorf("%s: seq %d, want %d", tc.name, got, tc.want)
		}
	}

	// A commit stamped before T but stored after it (appended across T)
	// is stepped over.
	cut := time.Now()
	appendAt(cut.Add(-time.Microsecond))
	c5 := appendAt(time.Now())
	if got := seqAt(cut); got != c5.Seq {
		t.Errorf("across the time: seq %d, want %d", got, c5.Seq)
	}

	// MaxMsgs 6: two more discard seq 1; seq 2 is then the oldest, so
	// commits at or after c1's and c2's times may be gone, and c3's are
	// all there.
	appendAt(time.Now())
	appendAt(time.Now())
	for _, at := range []time.Time{c1.Time, c2.Time} {
		if seq, err := l.SeqAtTime(ctx, at); !errors.Is(err, hub.ErrTooOld) {
			f, la, _ := l.Range(ctx)
			t.Errorf("SeqAtTime(%v) with seqs 1-2 discarded: %d %v, want ErrTooOld (range %d-%d)", at, seq, err, f, la)
		}
	}
	if got := seqAt(c3.Time); got != c3.Seq {
		t.Errorf("at the oldest but one: seq %d, want %d", got, c3.Seq)
	}
}
