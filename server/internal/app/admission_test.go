package app_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// testFaceSlot is the test face's own encoding slot, claimed at init
// beside the Connect handler's two and SSE's one, as a new face would.
var testFaceSlot = hub.NewSlot()

// testFace is a face that checks nothing: it turns a request straight
// into hub.Subscribe and records the topics of what it is sent, through
// its encoding slot.
type testFace struct {
	topics []string
}

func (f *testFace) Send(r *ringcastv1.SubscribeEventsResponse) error {
	for _, fact := range r.GetCommit().GetFacts() {
		f.topics = append(f.topics, fact.GetTopic())
	}
	return nil
}

func (f *testFace) SendEvent(ev *hub.Event) error {
	if ev.Cached(testFaceSlot) == nil {
		b, err := proto.Marshal(ev.Response())
		if err != nil {
			return err
		}
		ev.Cache(testFaceSlot, b)
	}
	return f.Send(ev.Response())
}

// serve is the whole of the test face: no scope, no token, no expiry
// check of its own.
func (f *testFace) serve(ctx context.Context, h *hub.Hub, topics ...string) error {
	return h.Subscribe(ctx, hub.Request{Face: "test", Topics: topics, EndAtHead: true}, f)
}

// TestAFaceIsAdmittedByTheEdge: a face that forgets every check still
// cannot serve a topic the caller's token does not grant, nor open a
// stream with an expired token: the production hub admits every stream
// through the edge (edge.Admitter). A named topic outside the grant is
// refused with auth's own error (which answers itself on every wire), no
// topic means the grant, and a refused stream is never counted. The face
// claims a fourth encoding slot, which the server starts with.
func TestAFaceIsAdmittedByTheEdge(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	h := srv.Hub()
	for _, topic := range []string{"gauges/eden", "other/x", "gauges/lune"} {
		if _, err := h.Publish([]*ringcastv1.Fact{scopeFact(topic, topic)}, ""); err != nil {
			t.Fatal(err)
		}
	}
	reader := auth.WithIdentity(context.Background(), &auth.Identity{Subject: "reader", Subscribe: auth.Grant{"gauges"}, Deadline: time.Now().Add(time.Hour)})
	expired := auth.WithIdentity(context.Background(), &auth.Identity{Subject: "late", Subscribe: auth.Grant{"*"}, Deadline: time.Now().Add(-time.Second)})

	var refused *auth.Error
	f := &testFace{}
	if err := f.serve(reader, h, "other"); !errors.As(err, &refused) || refused.Reason != auth.ReasonForbidden {
		t.Fatalf("a topic outside the grant: Subscribe = %v, want auth's forbidden refusal", err)
	}
	if err := f.serve(expired, h); !errors.As(err, &refused) || refused.Reason != auth.ReasonExpired {
		t.Fatalf("an expired token: Subscribe = %v, want auth's expired refusal", err)
	}
	if len(f.topics) != 0 {
		t.Fatalf("refused streams were sent %v", f.topics)
	}

	if err := f.serve(reader, h); err != nil {
		t.Fatalf("no topic named: Subscribe = %v", err)
	}
	if want := []string{"gauges/eden", "gauges/lune"}; !slices.Equal(f.topics, want) {
		t.Fatalf("no topic named: sent %v, want the grant's %v only", f.topics, want)
	}
	if n := h.Subscribers(); n != 0 {
		t.Fatalf("%d streams counted after the refused and the ended ones", n)
	}

	// Without a token the stream is served as asked.
	all := &testFace{}
	if err := all.serve(context.Background(), h); err != nil || len(all.topics) != 3 {
		t.Fatalf("without auth: Subscribe = %v, sent %v; want every topic", err, all.topics)
	}
}
