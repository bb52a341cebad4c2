package sse

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/eventjson"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/offstack"
)

// eventName is the `event:` name of a response, "" for those the face
// sends as comments (Heartbeat, ResyncRequired) or not at all.
func eventName(r *ringcastv1.SubscribeEventsResponse) string {
	switch r.GetEvent().(type) {
	case *ringcastv1.SubscribeEventsResponse_Commit:
		return names.EventCommit
	case *ringcastv1.SubscribeEventsResponse_ServerStatus:
		return names.EventStatus
	case *ringcastv1.SubscribeEventsResponse_Progress:
		return names.EventProgress
	case *ringcastv1.SubscribeEventsResponse_CaughtUp:
		return names.EventCaughtUp
	case *ringcastv1.SubscribeEventsResponse_Gap:
		return names.EventGap
	}
	return ""
}

// positionedJSON writes a positioned response's data: its id carries seq,
// instanceEpoch and fingerprint.
var positionedJSON = eventjson.Options{MaxDepth: eventjson.OnStack.MaxDepth, OmitPosition: true}

// dataJSON is how eventjson writes a frame's data line.
func dataJSON(positioned bool) eventjson.Options {
	if positioned {
		return positionedJSON
	}
	return eventjson.OnStack
}

// frame renders a response as a complete SSE event: an `id:` for a
// positioned response (seq > 0), its event name and one data line holding
// the response in protobuf JSON — the message a Connect JSON client
// receives (lowerCamel field names, 64-bit integers as strings, enums by
// name), less seq, instanceEpoch and fingerprint when the id carries them
// (docs/sse.md, "The data line"). It returns nil for responses without an
// event name.
//
// Commits and progress are encoded in place by package eventjson; the rare
// rest (status, caught-up, gap, and data nested deeper than eventjson.OnStack allows)
// by protojson, whose encoder is deep, on a helper goroutine, so that a
// stream's goroutine does not keep a stack grown for it (package offstack).
func frame(r *ringcastv1.SubscribeEventsResponse) ([]byte, error) {
	return appendFrame(make([]byte, 0, 256), r)
}

// frameSlot is the events' cache slot of the face's encoding: an event's
// shared response as a frame.
var frameSlot = hub.NewSlot()

// eventFrame is the frame of a ring event sent unchanged, shared by every
// stream (the event is immutable): read from the event's cache, or built
// here and handed to it.
func eventFrame(ev *hub.Event) ([]byte, error) {
	if b := ev.Cached(frameSlot); b != nil {
		return b, nil
	}
	return cacheFrame(ev)
}

// cacheFrame builds ev's frame and hands it to the event's cache (kept
// apart from eventFrame so that the cached case inlines into its callers).
func cacheFrame(ev *hub.Event) ([]byte, error) {
	b, err := sizedFrame(ev.Response(), ev.ProtoSize())
	if err != nil {
		return nil, err
	}
	return ev.Cache(frameSlot, b), nil
}

// sizedFrame is frame for a response whose protobuf encoding is size
// bytes (Event.ProtoSize), in a buffer sized for it: a frame's id, event
// name and the data's field names need room beyond what the data does.
func sizedFrame(r *ringcastv1.SubscribeEventsResponse, size int) ([]byte, error) {
	return appendFrame(make([]byte, 0, frameOverhead+eventjson.SizeHint(size)), r)
}

// frameOverhead is the room an SSE frame takes beyond its data line's JSON:
// "id: ", the id (up to 16+1+20+1+8 bytes), "\nevent: ", the name, "\ndata: ",
// and "\n\n".
const frameOverhead = 64

// appendFrame appends frame(r) to b.
func appendFrame(b []byte, r *ringcastv1.SubscribeEventsResponse) ([]byte, error) {
	name := eventName(r)
	if name == "" {
		return nil, nil
	}
	positioned := r.GetSeq() > 0
	if positioned {
		b = append(b, "id: "...)
		b = AppendID(b, r.GetInstanceEpoch(), r.GetSeq(), r.GetFingerprint())
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	if out, ok := dataJSON(positioned).Append(b, r); ok {
		return append(out, "\n\n"...), nil
	}
	buf := bytes.NewBuffer(b)
	err := offstack.Run(func() error {
		m := r
		if positioned {
			// The response may be shared with other streams and faces:
			// leave it as it is.
			m = proto.CloneOf(r)
			m.Seq, m.InstanceEpoch, m.Fingerprint = 0, 0, 0
		}
		raw, err := protojson.Marshal(m)
		if err != nil {
			return err
		}
		// protojson varies its spacing on purpose; compact it so the
		// frame is stable and one line.
		return json.Compact(buf, raw)
	})
	if err != nil {
		return nil, err
	}
	buf.WriteString("\n\n")
	return buf.Bytes(), nil
}
