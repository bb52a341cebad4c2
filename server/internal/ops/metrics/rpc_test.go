package metrics_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func handled(procedure, typ, code string) string {
	return `ringcast_rpc_handled_total{code="` + code + `",procedure="/ringcast.v1.EventService/` + procedure + `",type="` + typ + `"}`
}

func durations(procedure, typ, code string) string {
	return `ringcast_rpc_duration_seconds_count{code="` + code + `",procedure="/ringcast.v1.EventService/` + procedure + `",type="` + typ + `"}`
}

// TestRPCCountsAndDurationsByCode: on each protocol, a good and a rejected
// Publish and a finite stream are counted and timed under their procedure,
// type and code — including the request validation rejects.
func TestRPCCountsAndDurationsByCode(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	d, _ := structpb.NewStruct(map[string]any{"x": 1.0})
	for _, p := range ringtest.Protocols {
		c := srv.Client(p)
		if _, err := c.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "t/1", Type: "x", Payload: &ringcastv1.Fact_Data{Data: d}}}})); err != nil {
			t.Fatalf("%s: publish: %v", p, err)
		}
		if _, err := c.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{})); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("%s: empty publish: %v, want invalid_argument", p, err)
		}
		st, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{EndAtHead: true}))
		if err != nil {
			t.Fatal(err)
		}
		for st.Receive() {
		}
		if err := st.Err(); err != nil {
			t.Fatalf("%s: stream: %v", p, err)
		}
		st.Close()
	}
	m := scrape(t, srv.URL)
	for _, key := range []string{
		handled("Publish", "unary", "ok"), durations("Publish", "unary", "ok"),
		handled("Publish", "unary", "invalid_argument"), durations("Publish", "unary", "invalid_argument"),
		handled("SubscribeEvents", "server_stream", "ok"), durations("SubscribeEvents", "server_stream", "ok"),
	} {
		if m[key] != 3 {
			t.Errorf("%s = %v, want 3 (one per protocol)", key, m[key])
		}
	}
}

// TestDeliveryLagIsLiveOnly: batches replayed to a resuming stream before
// its CaughtUp are the replay age; only batches after it are delivery lag,
// so reconnects do not move the live-lag alert.
func TestDeliveryLagIsLiveOnly(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	h := srv.Hub()
	publish(t, h, 5)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	st, err := srv.Client(ringtest.Protocols[0]).SubscribeEvents(ctx, connectRequest(h.Epoch(), 1))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for st.Receive() && st.Msg().GetCaughtUp() == nil {
	}
	if st.Msg().GetCaughtUp() == nil {
		t.Fatalf("no CaughtUp: %v", st.Err())
	}
	m := scrape(t, srv.URL)
	if m[`ringcast_replay_event_age_seconds_count{face="connect"}`] == 0 {
		t.Error("the replay was not counted as replay age")
	}
	if n := m[`ringcast_delivery_lag_seconds_count{face="connect"}`]; n != 0 {
		t.Errorf("delivery lag count after a replay = %v, want 0", n)
	}
	publish(t, h, 1)
	for st.Receive() && st.Msg().GetCommit() == nil {
	}
	eventually(t, "a live batch in the delivery lag", func() bool {
		return scrape(t, srv.URL)[`ringcast_delivery_lag_seconds_count{face="connect"}`] == 1
	})
}

// TestOpenMetricsWhenAsked: an Accept header naming OpenMetrics gets it
// (with its # EOF terminator); no Accept gets the Prometheus text format.
func TestOpenMetricsWhenAsked(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type = %q, want OpenMetrics", ct)
	}
	if !strings.HasSuffix(string(body), "# EOF\n") || !strings.Contains(string(body), "# TYPE ringcast_subscribes counter") {
		t.Errorf("not OpenMetrics:\n%s", body)
	}
}
