package rpc_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	validatepb "buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// violations returns the rule ids carried in err's details, requiring err to
// be invalid_argument.
func violations(t *testing.T, err error) []string {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
		t.Fatalf("error = %v, want invalid_argument", err)
	}
	var ids []string
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if derr != nil {
			t.Fatalf("detail: %v", derr)
		}
		if vs, ok := v.(*validatepb.Violations); ok {
			for _, x := range vs.GetViolations() {
				ids = append(ids, x.GetRuleId())
			}
		}
	}
	if len(ids) == 0 {
		t.Fatalf("invalid_argument without violations in the details: %v", err)
	}
	return ids
}

func TestMalformedSubscribeIsInvalidArgumentWithViolations(t *testing.T) {
	long := strings.Repeat("a", 129)
	cases := []struct {
		name string
		req  *ringcastv1.SubscribeEventsRequest
		rule string
	}{
		{"since_fact without since_seq", &ringcastv1.SubscribeEventsRequest{SinceFact: 1}, "since_fact_requires_since_seq"},
		{"until_seq not after since_seq", &ringcastv1.SubscribeEventsRequest{SinceSeq: 5, UntilSeq: 5}, "until_seq_after_since_seq"},
		{"upper-case topic", &ringcastv1.SubscribeEventsRequest{Topics: []string{"Gauges"}}, "string.pattern"},
		{"trailing slash topic", &ringcastv1.SubscribeEventsRequest{Topics: []string{"gauges/"}}, "string.pattern"},
		{"long topic", &ringcastv1.SubscribeEventsRequest{Topics: []string{long}}, "string.max_len"},
		{"too many topics", &ringcastv1.SubscribeEventsRequest{Topics: make33Topics()}, "repeated.max_items"},
		{"undefined snapshot", &ringcastv1.SubscribeEventsRequest{Snapshot: 9}, "enum.defined_only"},
		{"since_time with since_seq", &ringcastv1.SubscribeEventsRequest{SinceSeq: 1, SinceTime: timestamppb.Now()}, "since_time_excludes_since_seq"},
	}
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s, err := c.SubscribeEvents(context.Background(), connect.NewRequest(tc.req))
				if err == nil {
					for s.Receive() {
						t.Fatalf("malformed request got a message: %v", s.Msg())
					}
					err = s.Err()
					s.Close()
				}
				if ids := violations(t, err); !contains(ids, tc.rule) {
					t.Fatalf("violations %v, want %s", ids, tc.rule)
				}
			})
		}
	})
}

func TestBadPublishIsRejectedWholeAndAppendsNothing(t *testing.T) {
	good := fact("a/b", "", 1)
	cases := []struct {
		name  string
		facts []*ringcastv1.Fact
		rule  string
	}{
		{"no facts", nil, "repeated.min_items"},
		{"bad topic among good facts", []*ringcastv1.Fact{good, fact("A/b", "", 2)}, "string.pattern"},
		{"empty type", []*ringcastv1.Fact{{Topic: "a/b"}}, "string.min_len"},
		{"bad type", []*ringcastv1.Fact{{Topic: "a/b", Type: "Level!"}}, "string.pattern"},
		{"long key", []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: strings.Repeat("k", 257)}}, "string.max_len"},
		{"too many facts", make257Facts(), "repeated.max_items"},
	}
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		_, before := srv.Hub().Bounds()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: tc.facts}))
				if ids := violations(t, err); !contains(ids, tc.rule) {
					t.Fatalf("violations %v, want %s", ids, tc.rule)
				}
				if _, head := srv.Hub().Bounds(); head != before {
					t.Fatalf("head moved from %d to %d after a rejected publish", before, head)
				}
			})
		}
		t.Run("idempotency key too long", func(t *testing.T) {
			_, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{good}, IdempotencyKey: strings.Repeat("k", 129)}))
			if ids := violations(t, err); !contains(ids, "string.max_len") {
				t.Fatalf("violations %v", ids)
			}
		})
	})
}

// TestNonFiniteNumbersAreRejected: binary protobuf can carry NaN and ±Inf
// in a fact's data, JSON cannot; such a publish is refused whole so it can
// never break a JSON or SSE subscriber.
func TestNonFiniteNumbersAreRejected(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		_, before := srv.Hub().Bounds()
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			nested, _ := structpb.NewStruct(map[string]any{"ok": 1.0, "levels": []any{1.0, map[string]any{"x": v}}})
			facts := []*ringcastv1.Fact{fact("a/b", "", 0), {Topic: "a/b", Type: "t", Payload: &ringcastv1.Fact_Data{Data: nested}}}
			_, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "facts[1].data.levels[1].x") {
				t.Fatalf("publish with %v: %v, want invalid_argument naming facts[1].data.levels[1].x", v, err)
			}
		}
		if _, head := srv.Hub().Bounds(); head != before {
			t.Fatalf("head moved from %d to %d", before, head)
		}
	})
}

func make33Topics() []string {
	ts := make([]string, 33)
	for i := range ts {
		ts[i] = "t"
	}
	return ts
}

func make257Facts() []*ringcastv1.Fact {
	fs := make([]*ringcastv1.Fact, 257)
	for i := range fs {
		fs[i] = fact("a/b", "", i)
	}
	return fs
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
