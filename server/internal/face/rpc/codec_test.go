package rpc

import (
	"bytes"
	"context"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// eventCatcher collects the shared events a stream sends.
type eventCatcher struct{ events []*hub.Event }

func (c *eventCatcher) Send(*ringcastv1.SubscribeEventsResponse) error { return nil }
func (c *eventCatcher) SendEvent(ev *hub.Event) error {
	c.events = append(c.events, ev)
	return nil
}

// sharedEvents publishes a commit and returns the ring's events (the
// bind-time status and the commit) as a stream sends them.
func sharedEvents(t *testing.T) []*hub.Event {
	t.Helper()
	h, err := hub.New(hub.Config{Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	data, _ := structpb.NewStruct(map[string]any{"level_m": 1.5, "station": "g-014"})
	facts := []*ringcastv1.Fact{{Topic: "gauges/ribble/g-014", Type: "gauge.level", Key: "g-014", Payload: &ringcastv1.Fact_Data{Data: data}}}
	if _, err := h.Publish(facts, ""); err != nil {
		t.Fatal(err)
	}
	var c eventCatcher
	if err := h.Subscribe(context.Background(), hub.Request{EndAtHead: true}, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.events) != 2 {
		t.Fatalf("got %d shared events, want 2", len(c.events))
	}
	return c.events
}

func codecNamed(t *testing.T, name string) *eventCodec {
	t.Helper()
	for _, c := range []*eventCodec{newProtoCodec(), newJSONCodec("json"), newJSONCodec("json; charset=utf-8")} {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no codec %q", name)
	return nil
}

func TestEventCodecSharedEventsMarshalLikeTheirResponse(t *testing.T) {
	events := sharedEvents(t)
	for _, name := range []string{"proto", "json", "json; charset=utf-8"} {
		t.Run(name, func(t *testing.T) {
			c := codecNamed(t, name)
			for _, ev := range events {
				msg := &sharedEvent{SubscribeEventsResponse: ev.Response(), ev: ev}
				first, err := c.MarshalAppend([]byte("prefix"), msg)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(first, []byte("prefix")) {
					t.Fatalf("MarshalAppend dropped dst: %q", first)
				}
				got := ev.Response().ProtoReflect().New().Interface()
				if err := c.Unmarshal(first[len("prefix"):], got); err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(got, ev.Response()) {
					t.Fatalf("seq %d: decoded %v, want %v", ev.Seq, got, ev.Response())
				}
				// Marshal hands out a copy: scribbling on it must not
				// change what the next send writes.
				copied, err := c.Marshal(msg)
				if err != nil {
					t.Fatal(err)
				}
				clear(copied)
				again, err := c.MarshalAppend(nil, msg)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again, first[len("prefix"):]) {
					t.Fatalf("seq %d: cached encoding changed after Marshal's result was modified", ev.Seq)
				}
			}
		})
	}
}

func TestEventCodecEncodesEachEventOncePerCodec(t *testing.T) {
	ev := sharedEvents(t)[1]
	calls := 0
	count := func(r *ringcastv1.SubscribeEventsResponse, size int) ([]byte, error) {
		calls++
		if want := proto.Size(r); size != want {
			t.Errorf("marshal was given size %d, want the protobuf size %d", size, want)
		}
		return proto.Marshal(r)
	}
	c := &eventCodec{slot: protoSlot, marshal: count}
	a, err := c.envelope(ev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.envelope(ev)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || &a[0] != &b[0] {
		t.Fatalf("marshal called %d times (want 1), shared bytes: %v", calls, &a[0] == &b[0])
	}
	j, err := (&eventCodec{slot: jsonSlot, marshal: func(r *ringcastv1.SubscribeEventsResponse, _ int) ([]byte, error) { return protojson.Marshal(r) }}).envelope(ev)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(j, a) {
		t.Fatal("JSON encoding served the proto bytes")
	}
}

func TestEventCodecFallsBackForOtherMessages(t *testing.T) {
	for _, name := range []string{"proto", "json"} {
		t.Run(name, func(t *testing.T) {
			c := codecNamed(t, name)
			in := &ringcastv1.PublishResponse{Seq: 7, InstanceEpoch: 42, Duplicate: true}
			b, err := c.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			out := &ringcastv1.PublishResponse{}
			if err := c.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(in, out) {
				t.Fatalf("round trip: got %v, want %v", out, in)
			}
			if _, err := c.Marshal("not a message"); err == nil {
				t.Fatal("Marshal accepted a non-proto value")
			}
			if err := c.Unmarshal(b, new(int)); err == nil {
				t.Fatal("Unmarshal accepted a non-proto value")
			}
		})
	}
}

var _ connect.Codec = (*eventCodec)(nil)
