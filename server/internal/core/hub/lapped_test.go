package hub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// heldSink records what a stream sends; its first Send reports that it
// has been entered and then waits for release, so a test can lap a stream
// that is known to be stalled (as if never scheduled).
type heldSink struct {
	entered, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	msgs             []*ringcastv1.SubscribeEventsResponse
	got              chan struct{} // a message arrived (capacity 1)
}

func newHeldSink() *heldSink {
	return &heldSink{entered: make(chan struct{}), release: make(chan struct{}), got: make(chan struct{}, 1)}
}

func (s *heldSink) Send(m *ringcastv1.SubscribeEventsResponse) error {
	s.once.Do(func() {
		close(s.entered)
		<-s.release
	})
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	select {
	case s.got <- struct{}{}:
	default:
	}
	return nil
}

func (s *heldSink) all() []*ringcastv1.SubscribeEventsResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*ringcastv1.SubscribeEventsResponse(nil), s.msgs...)
}

// lapFiltered subscribes with topics from head, holds the stream in its
// first write (CaughtUp) while publish laps the ring, releases it and
// returns the stream's end (when it ends) and its sink.
func lapFiltered(t *testing.T, h *hub.Hub, topics []string, publish func()) (*heldSink, <-chan error, context.CancelFunc) {
	t.Helper()
	_, head := h.Bounds()
	sink := newHeldSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.Subscribe(ctx, hub.Request{SinceSeq: head, Epoch: h.Epoch(), Topics: topics}, sink)
	}()
	select {
	case <-sink.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream never wrote") // hang guard
	}
	publish()
	close(sink.release)
	return sink, done, cancel
}

// TestLappedFilteredStreamWithNothingToSendIsNotCut: a filtered stream that
// stalls while the ring wraps many times over commits its filter skips has
// missed nothing, so it is not cut for lagging, however late it runs
// again: it covers the evicted commits with Progress and delivers what
// matches afterwards.
func TestLappedFilteredStreamWithNothingToSendIsNotCut(t *testing.T) {
	const window = 8
	h := newHub(t, hub.Config{Window: window})
	var wanted uint64
	sink, done, cancel := lapFiltered(t, h, []string{"gauges/ribble"}, func() {
		for i := range 10 * window {
			mustPublish(t, h, fact("gauges/ribblesdale/g-1", "", i), fact("other", "", i))
		}
		wanted = mustPublish(t, h, fact("gauges/ribble/g-14", "", 0))
	})
	defer cancel()
	for {
		msgs := sink.all()
		if len(msgs) > 0 && msgs[len(msgs)-1].Seq == wanted {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("stream ended (%v) after %v, want the commit at %d", err, msgs, wanted)
		case <-sink.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("got %v, want the commit at %d", msgs, wanted) // hang guard
		}
	}
	cancel()
	<-done
	msgs := sink.all()
	if msgs[0].GetCaughtUp() == nil {
		t.Fatalf("first message %v, want CaughtUp", msgs[0])
	}
	var prev uint64
	for _, m := range msgs[1:] {
		if m.GetResyncRequired() != nil {
			t.Fatalf("cut although nothing it would send left the ring: %v", msgs)
		}
		if m.Seq <= prev {
			t.Fatalf("positions not increasing: %v", msgs)
		}
		prev = m.Seq
		if m.Seq != wanted && m.GetProgress() == nil {
			t.Fatalf("sent %v, want only Progress before the commit at %d", m, wanted)
		}
	}
	if c := msgs[len(msgs)-1].GetCommit(); len(c.GetFacts()) != 1 || c.Facts[0].Topic != "gauges/ribble/g-14" {
		t.Fatalf("last message %v, want the matching commit", msgs[len(msgs)-1])
	}
}

// TestLappedFilteredStreamThatMissedAFactIsCut: when a commit the filter
// matches left the ring before the stalled stream read it, the stream is
// cut with ResyncRequired(SUBSCRIBER_LAGGING) at the position it covered —
// whether the match was the topic itself or below it, and whichever
// entry of a several-topic filter matched.
func TestLappedFilteredStreamThatMissedAFactIsCut(t *testing.T) {
	const window = 8
	for _, missedTopic := range []string{"gauges/ribble", "gauges/ribble/g-14", "alerts/x"} {
		t.Run(missedTopic, func(t *testing.T) {
			h := newHub(t, hub.Config{Window: window})
			_, head := h.Bounds()
			sink, done, cancel := lapFiltered(t, h, []string{"gauges/ribble", "alerts"}, func() {
				mustPublish(t, h, fact("other", "", 0))
				mustPublish(t, h, fact("other", "", 1), fact(missedTopic, "", 0))
				for i := range 3 * window {
					mustPublish(t, h, fact("other", "", i))
				}
			})
			defer cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the lapped stream did not end") // hang guard
			}
			msgs := sink.all()
			rr := msgs[len(msgs)-1].GetResyncRequired()
			if len(msgs) != 2 || rr.GetReason() != ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING || rr.RequestedSeq != head {
				t.Fatalf("got %v, want CaughtUp then ResyncRequired(SUBSCRIBER_LAGGING, requested %d)", msgs, head)
			}
		})
	}
}
