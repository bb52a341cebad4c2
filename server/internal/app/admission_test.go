package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge"
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

// serve, publish, publishBatch and outcome are the whole of the test
// face: each hands the hub its caller (the context, with the peer) and
// the request as sent, with no scope, grant, key space or expiry check of
// its own.
func (f *testFace) serve(ctx context.Context, h *hub.Hub, topics ...string) error {
	return h.Subscribe(ctx, hub.Request{Face: "test", Topics: topics, EndAtHead: true}, f)
}

func (f *testFace) publish(ctx context.Context, h *hub.Hub, c hub.Commit) (hub.Receipt, error) {
	return h.PublishCommit(hub.ContextWithPeer(ctx, "192.0.2.1:4000"), c)
}

func (f *testFace) publishBatch(ctx context.Context, h *hub.Hub, commits ...hub.Commit) ([]hub.Receipt, error) {
	return h.PublishBatch(hub.ContextWithPeer(ctx, "192.0.2.1:4000"), commits)
}

func (f *testFace) outcome(ctx context.Context, h *hub.Hub, key hub.Key) (hub.PublishOutcome, error) {
	return h.Outcome(hub.ContextWithPeer(ctx, "192.0.2.1:4000"), key)
}

// onMemoryAndEmbedded runs f on the memory store and on an embedded
// nats-server: admission is the hub's, whichever log it appends to, and
// the durable store keeps each publisher's keys in its own space.
func onMemoryAndEmbedded(t *testing.T, f func(t *testing.T, st ringtest.Store)) {
	for _, st := range []ringtest.Store{ringtest.Memory, ringtest.Embedded} {
		t.Run(st.Name, func(t *testing.T) { f(t, st) })
	}
}

// TestAFaceIsAdmittedByTheEdge: a face that forgets every check still
// cannot serve a topic the caller's token does not grant, nor open a
// stream with an expired token: the production hub admits every stream
// through the edge (edge.Admitter). A named topic outside the grant is
// refused with auth's own error (which answers itself on every wire), no
// topic means the grant, and a refused stream is never counted. The face
// claims a fourth encoding slot, which the server starts with.
func TestAFaceIsAdmittedByTheEdge(t *testing.T) {
	onMemoryAndEmbedded(t, testAFaceIsAdmittedByTheEdge)
}

func testAFaceIsAdmittedByTheEdge(t *testing.T, st ringtest.Store) {
	srv := st.Start(t, ringtest.Config())
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

// TestAFacePublishesAsTheEdgeAdmits: a face that forgets every check
// still cannot publish a topic outside the caller's publish grant, alone
// or in a batch (the whole batch is refused, naming the commit), nor
// reach another publisher's key space by naming it, nor read the outcome
// of a commit with a topic its caller may not subscribe to: the
// production hub admits every publish and outcome through the edge
// (edge.Admitter). A refusal is auth's own error, which answers itself on
// every wire.
func TestAFacePublishesAsTheEdgeAdmits(t *testing.T) {
	onMemoryAndEmbedded(t, testAFacePublishesAsTheEdgeAdmits)
}

func testAFacePublishesAsTheEdgeAdmits(t *testing.T, st ringtest.Store) {
	srv := st.Start(t, ringtest.Config())
	h := srv.Hub()
	hour := time.Now().Add(time.Hour)
	alice := auth.WithIdentity(context.Background(), &auth.Identity{Subject: "alice", Publish: auth.Grant{"*"}, Subscribe: auth.Grant{"*"}, Deadline: hour})
	gauges := auth.WithIdentity(context.Background(), &auth.Identity{Subject: "alice", Publish: auth.Grant{"gauges"}, Subscribe: auth.Grant{"gauges"}, Deadline: hour})
	bob := auth.WithIdentity(context.Background(), &auth.Identity{Subject: "bob", Publish: auth.Grant{"*"}, Subscribe: auth.Grant{"*"}, Deadline: hour})
	f := &testFace{}

	forbidden := func(what string, err error, named string) {
		t.Helper()
		var refused *auth.Error
		if !errors.As(err, &refused) || refused.Reason != auth.ReasonForbidden || !strings.HasPrefix(err.Error(), named) {
			t.Fatalf("%s: %v, want auth's forbidden refusal naming %s", what, err, named)
		}
	}
	_, err := f.publish(gauges, h, hub.Commit{Facts: []*ringcastv1.Fact{scopeFact("gauges/eden", "a"), scopeFact("other/x", "b")}, IdempotencyKey: "k0"})
	forbidden("a topic outside the publish grant", err, "facts[1]: ")
	_, err = f.publishBatch(gauges, h,
		hub.Commit{Facts: []*ringcastv1.Fact{scopeFact("gauges/eden", "c")}},
		hub.Commit{Facts: []*ringcastv1.Fact{scopeFact("other/y", "d")}})
	forbidden("a batch with a topic outside the publish grant", err, "commits[1].facts[0]: ")

	// alice publishes on a topic her narrower token may not read, and
	// bob's face names alice's key space for the same key.
	ra, err := f.publish(alice, h, hub.Commit{Facts: []*ringcastv1.Fact{scopeFact("other/z", "e")}, IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	aliceSpace := edge.Admitter{}.Publisher(alice)
	r, err := f.publish(bob, h, hub.Commit{Facts: []*ringcastv1.Fact{scopeFact("other/z", "f")}, IdempotencyKey: "k1", Publisher: aliceSpace})
	if err != nil || r.Duplicate {
		t.Fatalf("bob's publish naming alice's key space: %+v, %v; want a new commit of bob's own", r, err)
	}

	for _, c := range []struct {
		name string
		ctx  context.Context
		seq  uint64 // 0: not applied
	}{
		{"alice", alice, ra.Seq},
		{"alice's token without other/", gauges, 0},
		{"bob, naming alice's key space", bob, r.Seq}, // his own k1
	} {
		o, err := f.outcome(c.ctx, h, hub.Key{Publisher: aliceSpace, Name: "k1"})
		if err != nil || o.Applied != (c.seq != 0) || o.Receipt.Seq != c.seq {
			t.Fatalf("%s: outcome of k1 = %+v, %v; want the commit at seq %d (0: none)", c.name, o, err, c.seq)
		}
	}

	// Nothing refused was appended: the log holds the two commits on
	// other/z alone.
	all := &testFace{}
	if err := all.serve(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if want := []string{"other/z", "other/z"}; !slices.Equal(all.topics, want) {
		t.Fatalf("the log holds %v, want %v", all.topics, want)
	}
}
