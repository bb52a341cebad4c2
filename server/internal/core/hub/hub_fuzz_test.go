package hub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// FuzzSubscribe feeds arbitrary requests (well-formed or not: the hub must
// cope even with what validation would reject) to a hub holding multi-fact,
// keyed and filtered commits across a wrapped ring. Every stream must end
// without panicking, with strictly increasing positioned seqs, and with a
// terminal message or a bounded end.
func FuzzSubscribe(f *testing.F) {
	f.Add(uint64(0), uint8(0), uint32(0), "", uint8(0), uint8(0), uint64(0))
	f.Add(uint64(5), uint8(1), uint32(1), "g/a", uint8(2), uint8(2), uint64(0))
	f.Add(uint64(30), uint8(1), uint32(2), "g", uint8(1), uint8(1), uint64(31))
	f.Add(uint64(1), uint8(2), uint32(0), "g/b,x", uint8(2), uint8(2), uint64(3))
	f.Add(uint64(^uint64(0)), uint8(1), uint32(^uint32(0)), "/", uint8(9), uint8(9), uint64(^uint64(0)))
	f.Fuzz(func(t *testing.T, since uint64, epochSel uint8, sinceFact uint32, topics string, snapshot, onUnservable uint8, until uint64) {
		h, err := hub.New(hub.Config{Window: 8, Lease: -1, Heartbeat: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		for i := range 20 {
			facts := []*ringcastv1.Fact{fact("g/a", "k1", i), fact("g/b", "", i)}
			if i%3 == 0 {
				facts = append(facts, fact("x", "k2", i))
			}
			if _, err := h.Publish(facts, ""); err != nil {
				t.Fatal(err)
			}
		}
		epoch := [...]uint64{0, h.Epoch(), h.Epoch() ^ 7}[int(epochSel)%3]
		req := hub.Request{
			SinceSeq: since, Epoch: epoch, SinceFact: sinceFact,
			Snapshot: ringcastv1.Snapshot(snapshot % 4), OnUnservable: ringcastv1.OnUnservable(onUnservable % 4),
			UntilSeq: until, EndAtHead: until == 0,
		}
		if topics != "" {
			req.Topics = strings.Split(topics, ",")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		var rec recorder
		if err := h.Subscribe(ctx, req, &rec); err != nil && ctx.Err() == nil {
			t.Fatalf("Subscribe(%+v) = %v", req, err)
		}
		msgs := rec.all()
		checkPositioned(t, msgs)
		for i, m := range msgs {
			if m.InstanceEpoch != h.Epoch() {
				t.Fatalf("message %d without the running epoch", i)
			}
			if m.GetResyncRequired() != nil && i != len(msgs)-1 {
				t.Fatalf("ResyncRequired at %d of %d: not terminal", i, len(msgs))
			}
		}
	})
}
