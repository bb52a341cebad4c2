package goclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

// vector is one case of the client spec in clients/conformance/vectors
// (clients/conformance/README.md describes the format).
type vector struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Options     struct {
		Cursor         string   `json:"cursor"`
		Topics         []string `json:"topics"`
		UntilSeq       string   `json:"untilSeq"`
		EndAtHead      bool     `json:"endAtHead"`
		Snapshot       string   `json:"snapshot"`
		SnapshotInline bool     `json:"snapshotInline"`
		SinceTime      string   `json:"sinceTime"`
	} `json:"options"`
	StopAfterItems int `json:"stopAfterItems"`
	Streams        []struct {
		Request   map[string]any    `json:"request"`
		Responses []json.RawMessage `json:"responses"`
		End       string            `json:"end"`
		Message   string            `json:"message"`
	} `json:"streams"`
	Expect struct {
		Items       []map[string]any `json:"items"`
		End         string           `json:"end"`
		Cursor      string           `json:"cursor"`
		NextRequest map[string]any   `json:"nextRequest"`
		Reconnects  []string         `json:"reconnects"`
	} `json:"expect"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	files, err := filepath.Glob("../../../../clients/conformance/vectors/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	var out []vector
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		dec := json.NewDecoder(bytesReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, v)
	}
	return out
}

// scripted serves a vector's streams in order; a request beyond them is
// reported on extra and held open until the client goes away.
type scripted struct {
	ringcastv1connect.UnimplementedEventServiceHandler
	v     *vector
	mu    sync.Mutex
	reqs  []*ringcastv1.SubscribeEventsRequest
	extra chan *ringcastv1.SubscribeEventsRequest
}

func (s *scripted) SubscribeEvents(ctx context.Context, req *connect.Request[ringcastv1.SubscribeEventsRequest], st *connect.ServerStream[ringcastv1.SubscribeEventsResponse]) error {
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req.Msg)
	s.mu.Unlock()
	if n >= len(s.v.Streams) {
		select {
		case s.extra <- req.Msg:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}
	script := s.v.Streams[n]
	for _, raw := range script.Responses {
		msg := &ringcastv1.SubscribeEventsResponse{}
		if err := protojson.Unmarshal(raw, msg); err != nil {
			return connect.NewError(connect.CodeInternal, err)
		}
		if err := st.Send(msg); err != nil {
			return err
		}
	}
	switch script.End {
	case "ok":
		return nil
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	}
	var code connect.Code
	if err := code.UnmarshalText([]byte(script.End)); err != nil {
		return connect.NewError(connect.CodeInternal, err)
	}
	msg := script.Message
	if msg == "" {
		msg = "scripted end"
	}
	return connect.NewError(code, errors.New(msg))
}

// requestJSON is req in the vectors' form: proto JSON with every scalar,
// enum and list field, and a message field (sinceTime) only when set.
func requestJSON(t *testing.T, req *ringcastv1.SubscribeEventsRequest) map[string]any {
	t.Helper()
	b, err := (protojson.MarshalOptions{EmitUnpopulated: true}).Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range m {
		if v == nil { // an unset message field
			delete(m, k)
		}
	}
	return m
}

// vectorRun is what a subscription did with a vector's script.
type vectorRun struct {
	items  []map[string]any
	end    string
	cursor string
	reqs   []*ringcastv1.SubscribeEventsRequest
	next   *ringcastv1.SubscribeEventsRequest
	// reconnects is how each reconnect was made: "at_once" or "backoff".
	reconnects []string
}

func runVector(t *testing.T, v *vector, cursor string, stopAfter int) vectorRun {
	t.Helper()
	srv := &scripted{v: v, extra: make(chan *ringcastv1.SubscribeEventsRequest, 1)}
	c := ringcast.NewClient(fakeServer(t, srv), ringcast.WithBackoff(ringcast.Backoff{Min: time.Millisecond, Initial: 2 * time.Millisecond, Max: 20 * time.Millisecond}))
	t.Cleanup(c.CloseIdleConnections)
	var opts []ringcast.SubscribeOption
	if cursor != "" {
		cur, err := ringcast.ParseCursor(cursor)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, ringcast.WithCursor(cur))
	}
	o := v.Options
	if len(o.Topics) > 0 {
		opts = append(opts, ringcast.WithTopics(o.Topics...))
	}
	if o.UntilSeq != "" {
		u, err := strconv.ParseUint(o.UntilSeq, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, ringcast.WithUntil(u))
	}
	if o.EndAtHead {
		opts = append(opts, ringcast.WithEndAtHead())
	}
	switch o.Snapshot {
	case "":
	case "retained":
		opts = append(opts, ringcast.WithSnapshot(ringcastv1.Snapshot_SNAPSHOT_RETAINED))
	case "latest_per_key":
		opts = append(opts, ringcast.WithSnapshot(ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY))
	default:
		t.Fatalf("snapshot %q", o.Snapshot)
	}
	if o.SnapshotInline {
		opts = append(opts, ringcast.WithSnapshotInline())
	}
	if o.SinceTime != "" {
		at, err := time.Parse(time.RFC3339Nano, o.SinceTime)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, ringcast.WithSinceTime(at))
	}
	var reconnects []string // written by the iterating goroutine only
	connects, waited := 0, false
	opts = append(opts, ringcast.WithConnectionEvents(func(ev ringcast.ConnectionEvent) {
		switch ev.State {
		case ringcast.StateReconnecting:
			waited = true
		case ringcast.StateConnecting:
			if connects++; connects == 1 {
				return
			}
			if waited {
				reconnects = append(reconnects, "backoff")
			} else {
				reconnects = append(reconnects, "at_once")
			}
			waited = false
		}
	}))
	sub := c.Subscribe(opts...)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // hang guard
	defer cancel()
	var next *ringcastv1.SubscribeEventsRequest
	nextSeen := make(chan struct{})
	go func() {
		select {
		case next = <-srv.extra:
			close(nextSeen)
			cancel()
		case <-ctx.Done():
		}
	}()
	var r vectorRun
	r.end = "finished"
	for it, err := range sub.Items(ctx) {
		if err != nil {
			select {
			case <-nextSeen:
				r.end = "reconnect"
			default:
				if ctx.Err() != nil {
					t.Fatalf("hang guard: the iteration neither ended nor reconnected (items so far %v)", r.items)
				}
				r.end = "error:" + connect.CodeOf(err).String()
			}
			break
		}
		r.items = append(r.items, itemJSON(it))
		if stopAfter > 0 && len(r.items) == stopAfter {
			r.end = "stopped"
			break
		}
	}
	cancel()
	r.reconnects = reconnects
	r.cursor = sub.Cursor().String()
	if r.end == "reconnect" {
		r.next = next
	}
	srv.mu.Lock()
	r.reqs = srv.reqs
	srv.mu.Unlock()
	return r
}

func itemJSON(it ringcast.Item) map[string]any {
	m := map[string]any{"kind": it.Kind.String(), "epoch": strconv.FormatUint(it.Epoch, 10), "cursor": it.Cursor.String()}
	switch it.Kind {
	case ringcast.KindFact:
		m["seq"] = strconv.FormatUint(it.Seq, 10)
		m["index"] = float64(it.Index)
		m["last"] = it.Last
		if it.Traceparent != "" {
			m["traceparent"] = it.Traceparent
		}
	case ringcast.KindCaughtUp:
		m["headSeq"] = strconv.FormatUint(it.HeadSeq, 10)
	case ringcast.KindResynced:
		m["reason"] = it.Resync.Reason.String()
		m["inline"] = it.Resync.Inline
	}
	return m
}

// TestConformanceVectors runs every vector of the shared client spec: the
// items (with the cursor after each), how the iteration ended, the final
// cursor, every request sent and the next one.
func TestConformanceVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			r := runVector(t, &v, v.Options.Cursor, v.StopAfterItems)
			if (len(r.items) > 0 || len(v.Expect.Items) > 0) && !reflect.DeepEqual(r.items, v.Expect.Items) {
				t.Errorf("items\n got %v\nwant %v", r.items, v.Expect.Items)
			}
			if r.end != v.Expect.End {
				t.Errorf("end %q, want %q", r.end, v.Expect.End)
			}
			if v.Expect.Reconnects != nil && !reflect.DeepEqual(r.reconnects, v.Expect.Reconnects) {
				t.Errorf("reconnects %v, want %v", r.reconnects, v.Expect.Reconnects)
			}
			if r.cursor != v.Expect.Cursor {
				t.Errorf("cursor %s, want %s", r.cursor, v.Expect.Cursor)
			}
			for i, s := range v.Streams {
				if i >= len(r.reqs) {
					if v.Expect.End == "reconnect" {
						t.Errorf("stream %d was never requested", i)
					}
					break
				}
				if got := requestJSON(t, r.reqs[i]); !reflect.DeepEqual(got, s.Request) {
					t.Errorf("request %d\n got %v\nwant %v", i, got, s.Request)
				}
			}
			switch v.Expect.End {
			case "reconnect":
				if got := requestJSON(t, r.next); !reflect.DeepEqual(got, v.Expect.NextRequest) {
					t.Errorf("next request\n got %v\nwant %v", got, v.Expect.NextRequest)
				}
			case "stopped":
				// A new subscription from the persisted cursor string.
				empty := v
				empty.Streams = nil
				again := runVector(t, &empty, r.cursor, 0)
				if got := requestJSON(t, again.next); !reflect.DeepEqual(got, v.Expect.NextRequest) {
					t.Errorf("request from the persisted cursor\n got %v\nwant %v", got, v.Expect.NextRequest)
				}
			}
		})
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
