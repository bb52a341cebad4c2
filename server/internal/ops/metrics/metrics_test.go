package metrics_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/rpc"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/ops/metrics"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = 10 * time.Second

// scrape GETs /metrics and parses the text format into
// `name{label="v",...}` -> value (labels as the registry prints them:
// sorted by name).
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	out := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("bad line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad value in %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func subscribes(face string, o hub.Outcome) string {
	return `ringcast_subscribes_total{face="` + face + `",outcome="` + metrics.Label(o) + `"}`
}

// eventually polls cond until it holds or the test times out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitFor)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// sseUntilCaughtUp opens /events with lastID, reads until caught-up and
// returns the cancel func of the still open stream and the last id seen.
func sseUntilCaughtUp(t *testing.T, base, lastID string) (stop func(), last, firstEvent string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "id: "):
				last = line[4:]
			case strings.HasPrefix(line, "event: "):
				if firstEvent == "" {
					firstEvent = line[7:]
				}
				if line[7:] == names.EventCaughtUp {
					return
				}
			}
		}
	}()
	ringtest.Wait(t, done, waitFor, "caught-up")
	stop = func() {
		cancel()
		resp.Body.Close()
		tr.CloseIdleConnections()
	}
	t.Cleanup(stop)
	return stop, last, firstEvent
}

func publish(t *testing.T, h *hub.Hub, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		d, _ := structpb.NewStruct(map[string]any{"i": float64(i)})
		f := &ringcastv1.Fact{Topic: "t/1", Type: "test.fact", Key: "k" + strconv.Itoa(i%3), Payload: &ringcastv1.Fact_Data{Data: d}}
		if _, err := h.Publish([]*ringcastv1.Fact{f}, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSubscribeOutcomes: each way a subscribe starts is counted under its
// own outcome, per face.
func TestSubscribeOutcomes(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Window = 8
	srv := ringtest.Start(t, cfg)
	h := srv.Hub()

	m := scrape(t, srv.URL)
	for _, f := range []string{rpc.Face, sse.Face} {
		for _, o := range []hub.Outcome{hub.OutcomeNew, hub.OutcomeResumed, hub.OutcomeTooOld, hub.OutcomeAhead, hub.OutcomeEpochMismatch, hub.OutcomeFactOutOfRange, hub.OutcomeMalformedCursor} {
			if v, ok := m[subscribes(f, o)]; !ok || v != 0 {
				t.Errorf("%s = %v (present %v), want 0 from the start", subscribes(f, o), v, ok)
			}
		}
	}
	if m["ringcast_window_size"] != 8 || m["ringcast_head_seq"] != 1 || m["ringcast_oldest_seq"] != 1 {
		t.Errorf("window/head/oldest = %v/%v/%v, want 8/1/1", m["ringcast_window_size"], m["ringcast_head_seq"], m["ringcast_oldest_seq"])
	}
	if _, ok := m["go_goroutines"]; !ok {
		t.Error("no Go collector metrics")
	}

	// A new SSE subscriber, still open.
	stop, last, _ := sseUntilCaughtUp(t, srv.URL, "")
	m = scrape(t, srv.URL)
	if m[subscribes("sse", hub.OutcomeNew)] != 1 || m[`ringcast_subscribers{face="sse"}`] != 1 {
		t.Errorf("after a new SSE stream: new=%v subscribers=%v, want 1, 1", m[subscribes("sse", hub.OutcomeNew)], m[`ringcast_subscribers{face="sse"}`])
	}
	stop()
	eventually(t, "the SSE subscriber gauge to return to 0", func() bool {
		return scrape(t, srv.URL)[`ringcast_subscribers{face="sse"}`] == 0
	})

	// A resume, then a window miss.
	stop, _, first := sseUntilCaughtUp(t, srv.URL, last)
	stop()
	if first != "" && first != names.EventCaughtUp {
		t.Errorf("resume at head began with %q", first)
	}
	publish(t, h, 20)
	_, _, first = sseUntilCaughtUp(t, srv.URL, last)
	if first != names.EventGap {
		t.Errorf("stale id began with %q, want gap", first)
	}
	// A malformed id is its own outcome.
	_, _, first = sseUntilCaughtUp(t, srv.URL, "bogus")
	if first != names.EventGap {
		t.Errorf("malformed id began with %q, want gap", first)
	}
	m = scrape(t, srv.URL)
	for key, want := range map[string]float64{
		subscribes("sse", hub.OutcomeResumed):         1,
		subscribes("sse", hub.OutcomeTooOld):          1,
		subscribes("sse", hub.OutcomeMalformedCursor): 1,
		subscribes("sse", hub.OutcomeEpochMismatch):   0,
		"ringcast_commits_published_total":            20,
		"ringcast_facts_published_total":              20,
		"ringcast_head_seq":                           21,
		"ringcast_oldest_seq":                         14,
		"ringcast_publish_duration_seconds_count":     20,
	} {
		if m[key] != want {
			t.Errorf("%s = %v, want %v", key, m[key], want)
		}
	}
	if m[`ringcast_replay_event_age_seconds_count{face="sse"}`] == 0 {
		t.Error("no SSE replay observed")
	}

	// The Connect face, ahead of head.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	st, err := srv.Client(ringcast.ProtocolConnect).SubscribeEvents(ctx, connectRequest(h.Epoch(), 1000))
	if err != nil {
		t.Fatal(err)
	}
	for st.Receive() {
	}
	st.Close()
	if m := scrape(t, srv.URL); m[subscribes("connect", hub.OutcomeAhead)] != 1 {
		t.Errorf("connect ahead = %v, want 1", m[subscribes("connect", hub.OutcomeAhead)])
	}

	// After a restart the new instance counts the old epoch's id.
	srv.Restart()
	_, _, first = sseUntilCaughtUp(t, srv.URL, last)
	if first != names.EventGap {
		t.Errorf("other epoch's id began with %q, want gap", first)
	}
	m = scrape(t, srv.URL)
	if m[subscribes("sse", hub.OutcomeEpochMismatch)] != 1 || m[subscribes("sse", hub.OutcomeNew)] != 0 {
		t.Errorf("after restart: epoch_mismatch=%v new=%v, want 1, 0 (a fresh registry per instance)",
			m[subscribes("sse", hub.OutcomeEpochMismatch)], m[subscribes("sse", hub.OutcomeNew)])
	}
	found := false
	for k := range m {
		if strings.HasPrefix(k, "ringcast_instance_info{") && strings.Contains(k, `epoch="`+epoch.Format(srv.Hub().Epoch())+`"`) {
			found = true
		}
	}
	if !found {
		t.Error("ringcast_instance_info does not name the running epoch")
	}
}

func TestHandlerServesTextFormat(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q", ct)
	}
	for _, want := range []string{"# HELP ringcast_subscribes_total", "# TYPE ringcast_delivery_lag_seconds histogram", "ringcast_state_table_evictions_total 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %q in /metrics", want)
		}
	}
}

func connectRequest(epoch, since uint64) *connect.Request[ringcastv1.SubscribeEventsRequest] {
	return connect.NewRequest(&ringcastv1.SubscribeEventsRequest{SinceSeq: since, InstanceEpoch: epoch})
}

// BenchmarkDelivered is the cost a stream pays per batch it writes for the
// delivery-lag histogram.
func BenchmarkDelivered(b *testing.B) {
	m := metrics.New(rpc.Face, sse.Face)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Delivered(sse.Face, true, time.Millisecond)
		}
	})
}
