package sse

import (
	"bytes"
	"encoding/json"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// The event names of the face (the `event:` field).
const (
	EventCommit   = "commit"
	EventStatus   = "status"
	EventProgress = "progress"
	EventCaughtUp = "caught-up"
	EventGap      = "gap"
	// EventTokenExpired ends a stream whose token expired (auth jwt):
	// open a new EventSource with a fresh token and the last id seen.
	EventTokenExpired = "token-expired"
)

// eventName is the `event:` name of a response, "" for those the face
// sends as comments (Heartbeat, ResyncRequired) or not at all.
func eventName(r *ringcastv1.SubscribeEventsResponse) string {
	switch r.GetEvent().(type) {
	case *ringcastv1.SubscribeEventsResponse_Commit:
		return EventCommit
	case *ringcastv1.SubscribeEventsResponse_ServerStatus:
		return EventStatus
	case *ringcastv1.SubscribeEventsResponse_Progress:
		return EventProgress
	case *ringcastv1.SubscribeEventsResponse_CaughtUp:
		return EventCaughtUp
	case *ringcastv1.SubscribeEventsResponse_Gap:
		return EventGap
	}
	return ""
}

// reasonName is the lower-case name of a proto Reason used in comments:
// REASON_SUBSCRIBER_LAGGING is "subscriber_lagging".
func reasonName(r ringcastv1.Reason) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "REASON_"))
}

// frame renders a response as a complete SSE event: an `id:` for a
// positioned response (seq > 0), its event name and one data line holding
// the whole response in protobuf JSON — exactly the message a Connect JSON
// client receives (lowerCamel field names, 64-bit integers as strings,
// enums by name). It returns nil for responses without an event name.
func frame(r *ringcastv1.SubscribeEventsResponse) ([]byte, error) {
	name := eventName(r)
	if name == "" {
		return nil, nil
	}
	raw, err := protojson.Marshal(r)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if r.GetSeq() > 0 {
		b.WriteString("id: ")
		b.WriteString(FormatID(r.GetInstanceEpoch(), r.GetSeq()))
		b.WriteByte('\n')
	}
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteString("\ndata: ")
	// protojson varies its spacing on purpose; compact it so the frame is
	// stable and one line.
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	b.WriteString("\n\n")
	return b.Bytes(), nil
}
