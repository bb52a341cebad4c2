package loadgen

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestStreamsCountOnlyTheRunsOwnCommits: a stream of the fan-out counts as
// deliveries only the commits whose topic has the run's prefix; another
// publisher's commits on the same server (the demo feed's, another
// run's) are received and gap-checked but counted apart.
func TestStreamsCountOnlyTheRunsOwnCommits(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	var cs clients
	defer cs.close()
	cfg := Config{Server: srv.URL, Protocol: ringcast.ProtocolConnect}
	rpc := cs.rpc(cfg, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := serverStatus(ctx, rpc)
	if err != nil {
		t.Fatal(err)
	}
	r := &loadRun{cfg: cfg, epoch: st.InstanceEpoch, prefix: ownTopicPrefix()}
	if !strings.HasPrefix(r.prefix, "load/") || r.prefix == ownTopicPrefix() {
		t.Fatalf("prefix %q: want load/<random>, another each run", r.prefix)
	}
	s := &loadSub{}
	r.subs = []*loadSub{s}
	subCtx, stop := context.WithCancel(ctx)
	defer stop()
	live := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Go(func() { r.subscribe(subCtx, s, rpc, st.HeadSeq, func() { once.Do(func() { close(live) }) }) })
	<-live

	publish := func(topic string) uint64 {
		res, err := rpc.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{
			Topic: topic, Type: "t", Payload: &ringcastv1.Fact_BinaryData{BinaryData: []byte{1}},
		}}}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Msg.Seq
	}
	var last uint64
	for range 5 {
		publish(r.prefix + "/p0")
		publish("gauges/eden/g-001") // as the demo feed
		last = publish("load/p0")    // another run's, or an older tool's
	}
	for s.lastSeq.Load() < last {
		select {
		case <-ctx.Done():
			t.Fatalf("the stream reached seq %d of %d", s.lastSeq.Load(), last)
		case <-time.After(5 * time.Millisecond):
		}
	}
	stop()
	wg.Wait()
	if own, others, gaps := s.commits.Load(), s.others.Load(), s.gaps.Load(); own != 5 || others != 10 || gaps != 0 {
		t.Errorf("own %d, others %d, gaps %d: want 5, 10, 0", own, others, gaps)
	}
	if r.deliveries() != 5 || r.otherCommits() != 10 || r.errors() != 0 {
		t.Errorf("deliveries %d, others %d, errors %d (%s): want 5, 10, 0", r.deliveries(), r.otherCommits(), r.errors(), r.firstErr)
	}
}
