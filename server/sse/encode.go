package sse

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// The event names of the face (the `event:` field).
const (
	EventCommit   = "commit"
	EventStatus   = "status"
	EventProgress = "progress"
	EventCaughtUp = "caught-up"
	EventGap      = "gap"
)

// ReasonName is the SSE name of a proto Reason: REASON_CURSOR_TOO_OLD is
// "cursor_too_old", REASON_EPOCH_MISMATCH "epoch_mismatch", and so on.
func ReasonName(r ringcastv1.Reason) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "REASON_"))
}

// Gap is the data of a gap event.
type Gap struct {
	// Reason is a ReasonName.
	Reason string `json:"reason"`
	// RequestedID is the Last-Event-ID (or lastEventId) as received,
	// cut to 128 bytes.
	RequestedID string `json:"requested_id"`
	// OldestID is the id of the oldest event still held: a client that
	// had received it (or anything after it, up to HeadID) could resume.
	OldestID string `json:"oldest_id"`
	// HeadID is the id of the newest event when the gap was decided.
	HeadID string `json:"head_id"`
	// RequestedSeq is the seq of RequestedID (0 when malformed).
	RequestedSeq uint64 `json:"requested_seq"`
	OldestSeq    uint64 `json:"oldest_seq"`
	HeadSeq      uint64 `json:"head_seq"`
}

// CaughtUp is the data of a caught-up event.
type CaughtUp struct {
	HeadSeq uint64 `json:"head_seq"`
	HeadID  string `json:"head_id"`
}

var jsonOpts = protojson.MarshalOptions{UseProtoNames: true}

// frame renders one positioned response as a complete SSE event:
// id, event name and one data line holding the payload's JSON with seq and
// event_time first. It returns nil for responses that are not positioned.
func frame(r *ringcastv1.SubscribeEventsResponse) ([]byte, error) {
	var name string
	var payload proto.Message
	switch ev := r.GetEvent().(type) {
	case *ringcastv1.SubscribeEventsResponse_Commit:
		name, payload = EventCommit, ev.Commit
	case *ringcastv1.SubscribeEventsResponse_ServerStatus:
		name, payload = EventStatus, ev.ServerStatus
	case *ringcastv1.SubscribeEventsResponse_Progress:
		name = EventProgress
	default:
		return nil, nil
	}
	var b bytes.Buffer
	b.WriteString("id: ")
	b.WriteString(FormatID(r.GetInstanceEpoch(), r.GetSeq()))
	b.WriteString("\nevent: ")
	b.WriteString(name)
	b.WriteString("\ndata: {\"seq\":")
	b.WriteString(strconv.FormatUint(r.GetSeq(), 10))
	b.WriteString(",\"event_time\":")
	ts, err := jsonOpts.Marshal(r.GetEventTime())
	if err != nil {
		return nil, err
	}
	b.Write(ts)
	if payload != nil {
		raw, err := jsonOpts.Marshal(payload)
		if err != nil {
			return nil, err
		}
		// protojson output varies its spacing on purpose; compact it so
		// the frame is stable, then splice its fields after ours.
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return nil, err
		}
		body := bytes.TrimPrefix(c.Bytes(), []byte("{"))
		if len(body) > 0 && body[0] != '}' {
			b.WriteByte(',')
		}
		b.Write(body)
	} else {
		b.WriteByte('}')
	}
	b.WriteString("\n\n")
	return b.Bytes(), nil
}

// controlFrame renders an event without an id.
func controlFrame(name string, data any) ([]byte, error) {
	j, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(name)+len(j)+16)
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, j...)
	return append(b, "\n\n"...), nil
}
