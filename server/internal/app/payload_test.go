package app_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/nats-io/nats-server/v2/server"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// commitOf is a commit of n facts of about size bytes each.
func commitOf(n, size int) []*ringcastv1.Fact {
	facts := make([]*ringcastv1.Fact, n)
	for i := range facts {
		data, _ := structpb.NewStruct(map[string]any{"pad": strings.Repeat("x", size)})
		facts[i] = &ringcastv1.Fact{Topic: "big", Type: "payload.test", Payload: &ringcastv1.Fact_Data{Data: data}}
	}
	return facts
}

// TestLargestCommitOnEmbeddedStore: a commit near --max-request-bytes
// (56 facts of 63 KiB: 3.6 MB, each fact under --max-fact-bytes) is stored
// on the embedded store, whose max_payload follows the request limits
// (NATS's default, 1 MiB, refused it as unavailable), on every protocol,
// and read back whole.
func TestLargestCommitOnEmbeddedStore(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Store = app.Store{Kind: app.StoreEmbedded, DataDir: t.TempDir()}
	srv := ringtest.Start(t, cfg)
	facts := commitOf(56, 63<<10)
	for _, p := range ringtest.Protocols {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res, err := srv.Client(p).Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts}))
		cancel()
		if err != nil {
			t.Fatalf("publish of a 3.6 MB commit over %s: %v", p, err)
		}
		seq := res.Msg.GetSeq()
		ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
		stream, err := srv.Client(p).SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{
			SinceSeq: seq - 1, InstanceEpoch: res.Msg.GetInstanceEpoch(), UntilSeq: seq}))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for stream.Receive() {
			if c := stream.Msg().GetCommit(); c != nil && stream.Msg().GetSeq() == seq {
				got = len(c.GetFacts())
			}
		}
		cancel()
		if got != len(facts) {
			t.Fatalf("commit %d over %s read back with %d facts (%v), want %d", seq, p, got, stream.Err(), len(facts))
		}
	}
}

// TestJSONCommitLargerThanItsRequestOnEmbeddedStore: Connect JSON is
// denser than the protobuf it decodes to: 256 facts of 5,000 numbers each
// (about 2.6 MB of JSON, every fact under --max-fact-bytes) make a stored
// commit of about 14 MB, which the embedded store takes
// (hub.MaxCommitBytes sizes its max_payload by the facts as well as by the
// request).
func TestJSONCommitLargerThanItsRequestOnEmbeddedStore(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Store = app.Store{Kind: app.StoreEmbedded, DataDir: t.TempDir()}
	srv := ringtest.Start(t, cfg)
	nums := make([]any, 5000)
	for i := range nums {
		nums[i] = 1.0
	}
	facts := make([]*ringcastv1.Fact, 256)
	for i := range facts {
		data, err := structpb.NewStruct(map[string]any{"a": nums})
		if err != nil {
			t.Fatal(err)
		}
		facts[i] = &ringcastv1.Fact{Topic: "big", Type: "payload.test", Payload: &ringcastv1.Fact_Data{Data: data}}
	}
	client := ringcastv1connect.NewEventServiceClient(srv.HTTPClient(ringtest.Protocols[0]), srv.URL, connect.WithProtoJSON())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := client.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts})); err != nil {
		t.Fatalf("publish of 256 facts of 5,000 numbers as Connect JSON: %v", err)
	}
}

// TestCommitAboveExternalMaxPayload: an external NATS whose max_payload is
// below the largest commit the request limits allow is named at start (a
// Warn line with the largest commit it allows); a commit above it is
// refused with invalid_argument naming the limit, on every protocol —
// never unavailable — and readiness stays on; a smaller commit is stored.
func TestCommitAboveExternalMaxPayload(t *testing.T) {
	ns := natsServer(t, t.TempDir(), -1, func(o *server.Options) { o.MaxPayload = 256 << 10 })
	nc, err := natslog.Connect([]string{ns.ClientURL()}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var logs logbuf.Buffer
	cfg := ringtest.Config()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cfg.Store = app.Store{Kind: app.StoreJetStream, NATSConn: nc, NATSMaxBytes: -1, NATSMaxAge: -1}
	srv := ringtest.Start(t, cfg)
	if !strings.Contains(logs.String(), "level=WARN msg=\"the NATS server's max_payload is below the largest commit") ||
		!strings.Contains(logs.String(), "max_payload=262144 largest_commit_allowed=245760") {
		t.Errorf("start on a NATS of max_payload 256 KiB logged:\n%s\nwant a Warn naming max_payload and the largest commit it allows", logs.String())
	}
	big := commitOf(5, 60<<10)
	for _, p := range ringtest.Protocols {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err := srv.Client(p).Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: big}))
		_, berr := srv.Client(p).PublishBatch(ctx, connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: []*ringcastv1.PublishRequest{{Facts: big[:1]}, {Facts: big}}}))
		cancel()
		for what, err := range map[string]error{"Publish": err, "PublishBatch": berr} {
			var ce *connect.Error
			if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument || !strings.Contains(ce.Message(), "commit too large for the store") ||
				!strings.Contains(ce.Message(), "at most 262144") {
				t.Errorf("%s of a 300 KiB commit over %s: %v; want invalid_argument naming the limit", what, p, err)
			}
			if ce != nil && (strings.Contains(ce.Message(), "nats") || strings.Contains(ce.Message(), natslog.DefaultStream)) {
				t.Errorf("%s over %s: %q names the store's library or stream", what, p, ce.Message())
			}
		}
	}
	if c, body, err := probe(t, srv.Addr, "/readyz"); err != nil || c != http.StatusOK {
		t.Errorf("/readyz after refused commits: %d %q %v; want 200", c, body, err)
	}
	for _, p := range ringtest.Protocols {
		if got := healthStatus(t, srv.Addr, p, ""); got != grpchealth.StatusServing {
			t.Errorf("health over %s: %v, want SERVING", p, got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := srv.Client(ringtest.Protocols[0]).Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: big[:3]})); err != nil {
		t.Errorf("a 180 KiB commit: %v", err)
	}
}
