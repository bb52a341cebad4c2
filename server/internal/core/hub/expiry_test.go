package hub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// TestExpiredRequestSendsNothing: a stream whose Expiry has passed when it
// starts ends with ErrExpired before it sends anything (no replay, no
// CaughtUp, no Progress), on a parked sink as on a plain one.
func TestExpiredRequestSendsNothing(t *testing.T) {
	h := newHub(t, hub.Config{})
	for i := range 5 {
		mustPublish(t, h, fact("gauges/eden", "", i))
	}
	for name, req := range map[string]hub.Request{
		"replay from the start": {Expiry: time.Now().Add(-time.Millisecond)},
		"snapshot":              {Expiry: time.Now().Add(-time.Millisecond), Snapshot: ringcastv1.Snapshot_SNAPSHOT_RETAINED},
		"live at the head":      {Expiry: time.Now().Add(-time.Millisecond), SinceSeq: 5, Epoch: h.Epoch()},
	} {
		t.Run(name, func(t *testing.T) {
			var sent int
			err := h.Subscribe(context.Background(), req, sinkFunc(func(*ringcastv1.SubscribeEventsResponse) error {
				sent++
				return nil
			}))
			if !errors.Is(err, hub.ErrExpired) || sent != 0 {
				t.Fatalf("Subscribe = %v after %d messages; want ErrExpired and nothing sent", err, sent)
			}
		})
	}
}
