package rpc_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestAdvertisedLimitsAreTheEnforcedOnes reads the limits ServerStatus
// advertises and probes the server at each one: a request at the limit is
// accepted and one past it is refused, so the advertised numbers cannot
// drift from the enforced ones.
func TestAdvertisedLimitsAreTheEnforcedOnes(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		cfg := ringtest.Config()
		cfg.MaxRequestBytes = 64 << 10
		srv := store.Start(t, cfg)
		c := srv.Client(p)
		ctx := context.Background()
		st, err := c.GetServerStatus(ctx, connect.NewRequest(&ringcastv1.GetServerStatusRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		lim := st.Msg.GetStatus().GetLimits()
		if lim.GetMaxFactsPerCommit() == 0 || lim.GetMaxTopics() == 0 || lim.GetMaxRequestBytes() != uint32(cfg.MaxRequestBytes) {
			t.Fatalf("advertised limits %v, want non-zero fact and topic limits and max_request_bytes %d", lim, cfg.MaxRequestBytes)
		}

		facts := func(n int) []*ringcastv1.Fact {
			fs := make([]*ringcastv1.Fact, n)
			for i := range fs {
				fs[i] = fact("a/b", "", i)
			}
			return fs
		}
		n := int(lim.GetMaxFactsPerCommit())
		if _, err := c.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts(n)})); err != nil {
			t.Fatalf("publish of max_facts_per_commit = %d facts: %v", n, err)
		}
		_, err = c.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts(n + 1)}))
		if ids := violations(t, err); !contains(ids, "repeated.max_items") {
			t.Fatalf("publish of %d facts: violations %v, want repeated.max_items", n+1, ids)
		}

		topics := func(n int) []string {
			ts := make([]string, n)
			for i := range ts {
				ts[i] = "t"
			}
			return ts
		}
		subscribe := func(n int) error {
			s, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{Topics: topics(n), EndAtHead: true}))
			if err != nil {
				return err
			}
			defer s.Close()
			for s.Receive() {
			}
			return s.Err()
		}
		m := int(lim.GetMaxTopics())
		if err := subscribe(m); err != nil {
			t.Fatalf("subscribe with max_topics = %d topics: %v", m, err)
		}
		if ids := violations(t, subscribe(m+1)); !contains(ids, "repeated.max_items") {
			t.Fatalf("subscribe with %d topics: violations %v, want repeated.max_items", m+1, ids)
		}

		big := func(size int) *ringcastv1.PublishRequest {
			data, _ := structpb.NewStruct(map[string]any{"text": strings.Repeat("x", size)})
			return &ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Payload: &ringcastv1.Fact_Data{Data: data}}}}
		}
		max := int(lim.GetMaxRequestBytes())
		if _, err := c.Publish(ctx, connect.NewRequest(big(max/2))); err != nil {
			t.Fatalf("publish of half max_request_bytes: %v", err)
		}
		if _, err := c.Publish(ctx, connect.NewRequest(big(max+1))); connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("publish over max_request_bytes: %v, want resource_exhausted", err)
		}
	})
}
