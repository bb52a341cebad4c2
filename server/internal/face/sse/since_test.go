package sse_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// sinceQuery is the query of a stream from at.
func sinceQuery(at time.Time) string {
	return "?since_time=" + url.QueryEscape(at.Format(time.RFC3339Nano))
}

// eventIDs returns the ids of evs, comma-joined.
func eventIDs(evs []event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, ev.ID)
	}
	return strings.Join(s, ",")
}

// TestSinceTimeQuery: GET /events?since_time= replays every retained commit
// whose event time is at or after it — exactly at a commit's time, between
// two, at equal times of consecutive commits, before everything — then
// caught-up and the live tail, on every store (docs/sse.md).
func TestSinceTimeQuery(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		h := srv.Hub()
		receipt := func(topic string) hub.Receipt {
			r, err := h.Publish([]*ringcastv1.Fact{{Topic: topic, Type: "test.fact"}}, "")
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		c1, c2 := receipt("a/x"), receipt("b/x")
		pair, err := h.PublishBatch(context.Background(), []hub.Commit{
			{Facts: []*ringcastv1.Fact{{Topic: "a/y", Type: "test.fact"}}},
			{Facts: []*ringcastv1.Fact{{Topic: "a/z", Type: "test.fact"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		c3, c4 := pair[0], pair[1]
		c5 := receipt("b/y")
		between := c1.Time.Add(time.Nanosecond)
		if !c3.Time.Equal(c4.Time) || !c2.Time.After(between) || !c3.Time.After(c2.Time) {
			t.Fatalf("event times %v %v %v %v: want c1 < c1+1ns < c2 < c3 = c4", c1.Time, c2.Time, c3.Time, c4.Time)
		}
		span := func(from, to uint64) string {
			var seqs []uint64
			for s := from; s <= to; s++ {
				seqs = append(seqs, s)
			}
			return ids(h, seqs...)
		}
		all := span(c1.Seq, c5.Seq)
		if !store.Durable {
			all = ids(h, 1) + "," + all // the bind status, as a replay delivers it
		}
		for _, tc := range []struct {
			name, query, want string
		}{
			{"exactly at a commit's time", sinceQuery(c2.Time), span(c2.Seq, c5.Seq)},
			{"between two commits", sinceQuery(between), span(c2.Seq, c5.Seq)},
			{"at equal times of consecutive commits", sinceQuery(c3.Time), span(c3.Seq, c5.Seq)},
			{"before everything", "?since_time=2000-01-01T00:00:00Z", all},
			{"an offset whose + was not escaped", "?since_time=2000-01-01T01:00:00+01:00", all},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := open(t, srv.URL, tc.query, "")
				if got := eventIDs(s.untilCaughtUp()); got != tc.want {
					t.Fatalf("ids %s, want %s", got, tc.want)
				}
			})
		}
		t.Run("with a topic", func(t *testing.T) {
			s := open(t, srv.URL, sinceQuery(c2.Time)+"&topic=a", "")
			evs := s.untilCaughtUp()
			var got []string
			for _, ev := range evs {
				got = append(got, ev.Name+"@"+ev.ID)
			}
			want := []string{names.EventCommit + "@" + id(h, c3.Seq), names.EventCommit + "@" + id(h, c4.Seq), names.EventProgress + "@" + id(h, c5.Seq)}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("events %v, want %v", got, want)
			}
		})
		t.Run("after the head", func(t *testing.T) {
			s := open(t, srv.URL, sinceQuery(c5.Time.Add(time.Hour)), "")
			if got := s.untilCaughtUp(); len(got) != 0 {
				t.Fatalf("events before caught-up %v, want none", got)
			}
			live := receipt("a/x")
			if ev := s.expect(names.EventCommit); ev.ID != id(h, live.Seq) {
				t.Fatalf("live event %q, want %q", ev.ID, id(h, live.Seq))
			}
		})
		t.Run("Last-Event-ID wins over since_time", func(t *testing.T) {
			// An EventSource reconnects with the URL it was opened with
			// and the id it got to: it resumes there.
			_, head := h.Bounds()
			s := open(t, srv.URL, "?since_time=2000-01-01T00:00:00Z", id(h, c4.Seq))
			if got := eventIDs(s.untilCaughtUp()); got != span(c5.Seq, head) {
				t.Fatalf("ids %s, want %s", got, span(c5.Seq, head))
			}
		})
	})
}

// TestSinceTimeBelowTheWindowIsAGap: where the RPC would answer
// ResyncRequired(CURSOR_TOO_OLD), SSE sends a gap event, then the snapshot.
func TestSinceTimeBelowTheWindowIsAGap(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		cfg := ringtest.Config()
		cfg.Window = 8
		srv := store.Start(t, cfg)
		h := srv.Hub()
		var head uint64
		for range 20 {
			head = publish(t, h, "a/b")
		}
		waitOldest(t, h, head-7)
		oldest, _ := h.Bounds()
		s := open(t, srv.URL, "?since_time=2000-01-01T00:00:00Z", "")
		for {
			ev := s.next()
			if ev.Name == names.EventStatus && ev.ID == "" {
				continue // a durable store's replica status
			}
			g := decode(t, ev).GetGap()
			if ev.Name != names.EventGap || g.GetReason() != ringcastv1.Reason_REASON_CURSOR_TOO_OLD || g.GetRequestedSeq() != 0 {
				t.Fatalf("first event %q %s, want gap(cursor_too_old, requested 0)", ev.Name, ev.Data)
			}
			break
		}
		var want []uint64
		for q := oldest; q <= head; q++ {
			want = append(want, q)
		}
		if got := eventIDs(s.untilCaughtUp()); got != ids(h, want...) {
			t.Fatalf("snapshot after the gap %s, want %s", got, ids(h, want...))
		}
	})
}
