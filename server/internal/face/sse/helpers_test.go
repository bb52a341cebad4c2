package sse_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(ringtest.Main(m)) }

const waitFor = 10 * time.Second

// event is one parsed SSE block: an event (Name, ID, Data), a comment, or
// a retry hint. end marks the end of the response.
// event is one SSE event as read. ID is its id less the fingerprint (the
// position, as id(h, seq) spells it) and FullID the id as sent; every id
// of a commit, progress or status carries a fingerprint (read checks it).
type event struct {
	ID, Name, Data string
	FullID         string
	Comment        string
	Retry          string
	end            bool
	err            error
}

// stream is an open GET /events response read on its own goroutine.
type stream struct {
	t      *testing.T
	resp   *http.Response
	events chan event
	cancel context.CancelFunc
	done   chan struct{}
	// paused, when non-nil, blocks the reader until closed.
	gate chan chan struct{}
}

// open starts GET url+"/events"+query with the Last-Event-ID header when
// lastID is not empty.
func open(t *testing.T, base, query, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET /events: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("GET /events: status %d: %s", resp.StatusCode, b)
	}
	s := &stream{t: t, resp: resp, events: make(chan event, 1<<16), cancel: cancel, done: make(chan struct{}), gate: make(chan chan struct{}, 1)}
	go s.read()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-s.done
		tr.CloseIdleConnections()
	})
	return s
}

func (s *stream) read() {
	defer close(s.done)
	defer close(s.events)
	r := bufio.NewReader(s.resp.Body)
	var ev event
	var data []string
	for {
		select {
		case g := <-s.gate:
			<-g
		default:
		}
		line, err := r.ReadString('\n')
		if err != nil {
			s.events <- event{end: true, err: err}
			return
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			ev.Data = strings.Join(data, "\n")
			if ev != (event{}) {
				s.events <- ev
			}
			ev, data = event{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			ev.Comment = strings.TrimSpace(line[1:])
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.FullID, ev.ID = value, value
			if ep, seq, fp, err := sse.ParseLastEventID(value); err == nil && fp != 0 {
				ev.ID = sse.FormatID(ep, seq, 0)
			} else {
				ev.ID = "no fingerprint: " + value // fails every comparison with id(h, seq)
			}
		case "event":
			ev.Name = value
		case "data":
			data = append(data, value)
		case "retry":
			ev.Retry = value
		}
	}
}

// pause stops the reader before its next line until the returned function
// is called.
func (s *stream) pause() (resume func()) {
	g := make(chan struct{})
	s.gate <- g
	return func() { close(g) }
}

// next returns the next event or comment (skipping retry hints and
// heartbeats unless keep says otherwise).
func (s *stream) next() event {
	s.t.Helper()
	for {
		ev := ringtest.Wait(s.t, s.events, waitFor, "an SSE event")
		if ev.Retry != "" && ev.Name == "" || strings.HasPrefix(ev.Comment, "heartbeat") && ev.Name == "" {
			continue
		}
		return ev
	}
}

// expect returns the next event and checks its name.
func (s *stream) expect(name string) event {
	s.t.Helper()
	ev := s.next()
	if ev.end {
		s.t.Fatalf("stream ended (%v) while waiting for %q", ev.err, name)
	}
	if ev.Name != name {
		s.t.Fatalf("got event %q (id %q, comment %q, data %s), want %q", ev.Name, ev.ID, ev.Comment, ev.Data, name)
	}
	return ev
}

// untilCaughtUp collects the positioned events before caught-up. A
// status event without an id (a durable store's replica status,
// docs/protocol.md "Stores") is skipped: tests that expect one say so.
func (s *stream) untilCaughtUp() []event {
	s.t.Helper()
	var got []event
	for {
		ev := s.next()
		if ev.end {
			s.t.Fatalf("stream ended (%v) before caught-up", ev.err)
		}
		if ev.Name == names.EventCaughtUp {
			return got
		}
		if ev.ID == "" && ev.Name == names.EventStatus {
			continue
		}
		if ev.ID == "" {
			s.t.Fatalf("unexpected unpositioned event %q before caught-up: %s", ev.Name, ev.Data)
		}
		got = append(got, ev)
	}
}

// expectEnd waits for the response to end, returning the comments seen.
func (s *stream) expectEnd() []string {
	s.t.Helper()
	var comments []string
	for {
		ev := ringtest.Wait(s.t, s.events, waitFor, "the end of the response")
		if ev.end {
			return comments
		}
		if ev.Comment != "" {
			comments = append(comments, ev.Comment)
		}
	}
}

// decode rebuilds the response an event carries as a client would
// (docs/sse.md, "The data line"): its data parsed as strict protobuf JSON
// of a SubscribeEventsResponse (unknown fields are errors), then, for an
// event with an id, seq and instanceEpoch set from the id. It fails when a
// positioned event's data repeats either: the id carries them.
func decode(t *testing.T, ev event) *ringcastv1.SubscribeEventsResponse {
	t.Helper()
	var m ringcastv1.SubscribeEventsResponse
	if err := protojson.Unmarshal([]byte(ev.Data), &m); err != nil {
		t.Fatalf("data %q: %v", ev.Data, err)
	}
	if ev.ID == "" {
		return &m
	}
	if m.Seq != 0 || m.InstanceEpoch != 0 || m.Fingerprint != 0 {
		t.Fatalf("event %q with id %q repeats its position in its data: %s", ev.Name, ev.ID, ev.Data)
	}
	epoch, seq, fp, err := sse.ParseLastEventID(ev.FullID)
	if err != nil {
		t.Fatalf("event %q: id %q: %v", ev.Name, ev.ID, err)
	}
	m.Seq, m.InstanceEpoch, m.Fingerprint = seq, epoch, fp
	return &m
}

// publish appends one commit with one fact per topic and returns its seq.
func publish(t *testing.T, h *hub.Hub, topics ...string) uint64 {
	t.Helper()
	var facts []*ringcastv1.Fact
	for i, topic := range topics {
		d, _ := structpb.NewStruct(map[string]any{"n": float64(i)})
		facts = append(facts, &ringcastv1.Fact{Topic: topic, Type: "test.fact", Key: topic, Payload: &ringcastv1.Fact_Data{Data: d}})
	}
	r, err := h.Publish(facts, "")
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return r.Seq
}

// id is the Last-Event-ID of seq without a fingerprint (served by its
// epoch and seq alone).
func id(h *hub.Hub, seq uint64) string { return sse.FormatID(h.Epoch(), seq, 0) }

// waitOldest waits until the server reports oldest as the first servable
// seq. A durable store's first seq moves as the stream's limits discard
// commits, and the hub learns it when it next asks the stream (about every
// second); memory reports its ring's at once.
func waitOldest(t *testing.T, h *hub.Hub, oldest uint64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for {
		got, _ := h.Bounds()
		if got == oldest {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("oldest seq %d, want %d", got, oldest)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// forEachStore runs f on each store twice: with streams that wait on their
// goroutines, and with parked streams (app.Config.ParkSSE).
func forEachStore(t *testing.T, f func(t *testing.T, st ringtest.Store)) {
	t.Helper()
	ringtest.ForEachStore(t, func(t *testing.T, st ringtest.Store) {
		t.Run("goroutine", func(t *testing.T) { f(t, st) })
		t.Run("parked", func(t *testing.T) {
			f(t, st.Adjusting(func(cfg *app.Config) { cfg.ParkSSE = true }))
		})
	})
}
