package hub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// TestEveryEndReportsCoverage: whichever way a filtered stream ends with OK
// status — bound reached, hub drained, lease expired — its last
// positioned message covers everything it skipped, so a client resuming
// from its cursor is not sent those commits again.
func TestEveryEndReportsCoverage(t *testing.T) {
	cases := []struct {
		name string
		cfg  hub.Config
		req  func(h *hub.Hub) hub.Request
		end  func(h *hub.Hub) // ends the stream after the unrelated commits
		live bool             // publish the unrelated commits once the stream is live
	}{
		{"until_seq", hub.Config{}, func(h *hub.Hub) hub.Request {
			return hub.Request{SinceSeq: 1, Epoch: h.Epoch(), Topics: []string{"wanted"}, UntilSeq: 5}
		}, func(*hub.Hub) {}, true},
		{"drain", hub.Config{}, func(h *hub.Hub) hub.Request {
			return hub.Request{SinceSeq: 1, Epoch: h.Epoch(), Topics: []string{"wanted"}}
		}, func(h *hub.Hub) { h.Drain() }, true},
		{"lease", hub.Config{Lease: time.Millisecond}, func(h *hub.Hub) hub.Request {
			return hub.Request{SinceSeq: 1, Epoch: h.Epoch(), Topics: []string{"wanted"}}
		}, func(*hub.Hub) {}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHub(t, tc.cfg)
			publish := func() {
				for i := range 4 {
					mustPublish(t, h, fact("unrelated", "", i)) // seqs 2..5
				}
			}
			if !tc.live {
				publish()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var rec recorder
			done := make(chan error, 1)
			go func() { done <- h.Subscribe(ctx, tc.req(h), &rec) }()
			if tc.live {
				for !hasCaughtUp(rec.all()) {
					time.Sleep(time.Millisecond)
				}
				publish()
			}
			tc.end(h)
			if err := <-done; err != nil {
				t.Fatalf("Subscribe = %v, want nil (OK)", err)
			}
			var last *ringcastv1.SubscribeEventsResponse
			for _, m := range rec.all() {
				if m.Seq != 0 {
					last = m
				}
			}
			_, head := h.Bounds()
			if last == nil || last.Seq != head || (last.GetProgress() == nil && last.GetServerStatus() == nil) {
				t.Fatalf("last positioned message %v, want a Progress (or the DRAINING status) at head %d; messages %v", last, head, rec.all())
			}
		})
	}
}

func hasCaughtUp(msgs []*ringcastv1.SubscribeEventsResponse) bool {
	for _, m := range msgs {
		if m.GetCaughtUp() != nil {
			return true
		}
	}
	return false
}

// TestMalformedCursorIsItsOwnReason: a face that could not parse a cursor
// says so, and the hub answers REASON_MALFORMED_CURSOR (requested_seq 0),
// counted under its own outcome; inline, the snapshot follows the Gap.
func TestMalformedCursorIsItsOwnReason(t *testing.T) {
	var obs outcomes
	h := newHub(t, hub.Config{Observer: &obs})
	mustPublish(t, h, fact("a", "", 1))
	msgs := run(t, h, hub.Request{MalformedCursor: true, EndAtHead: true})
	if len(msgs) != 1 || msgs[0].GetResyncRequired().GetReason() != ringcastv1.Reason_REASON_MALFORMED_CURSOR || msgs[0].GetResyncRequired().GetRequestedSeq() != 0 {
		t.Fatalf("malformed cursor got %v, want only ResyncRequired(MALFORMED_CURSOR) with requested_seq 0", msgs)
	}
	msgs = run(t, h, hub.Request{MalformedCursor: true, OnUnservable: ringcastv1.OnUnservable_ON_UNSERVABLE_SNAPSHOT_INLINE, EndAtHead: true})
	if len(msgs) != 4 || msgs[0].GetGap().GetReason() != ringcastv1.Reason_REASON_MALFORMED_CURSOR || msgs[1].Seq != 1 || msgs[2].Seq != 2 || msgs[3].GetCaughtUp() == nil {
		t.Fatalf("malformed cursor inline got %v, want Gap(MALFORMED_CURSOR), the retained snapshot (seqs 1, 2), CaughtUp", msgs)
	}
	if got := obs.list(); len(got) != 2 || got[0] != hub.OutcomeMalformedCursor || got[1] != hub.OutcomeMalformedCursor {
		t.Fatalf("outcomes %v, want malformed_cursor twice", got)
	}
}

// outcomes is an Observer recording subscribe outcomes.
type outcomes struct {
	mu  sync.Mutex
	got []hub.Outcome
}

func (*outcomes) StreamStarted(string)                  {}
func (*outcomes) StreamEnded(string)                    {}
func (*outcomes) Lagged(string)                         {}
func (*outcomes) Published(int, time.Duration)          {}
func (*outcomes) Delivered(string, bool, time.Duration) {}

func (o *outcomes) Subscribed(_ string, out hub.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, out)
}

func (o *outcomes) list() []hub.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]hub.Outcome(nil), o.got...)
}
