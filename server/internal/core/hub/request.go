package hub

import (
	"errors"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// Request is a subscribe, independent of the face it arrived on.
type Request struct {
	Face         string // the name of the face it arrived on (e.g. rpc.Face): an Observer label only
	SinceSeq     uint64
	Epoch        uint64
	SinceFact    uint32
	Topics       []string
	Snapshot     ringcastv1.Snapshot
	OnUnservable ringcastv1.OnUnservable
	UntilSeq     uint64
	EndAtHead    bool
	// MalformedCursor says the face received a cursor it could not parse
	// (an SSE Last-Event-ID): the hub answers REASON_MALFORMED_CURSOR.
	MalformedCursor bool
	// Expiry, when set, is the instant from which the credentials the
	// stream was opened with are refused: a stream whose Expiry has passed
	// when it starts ends at once with ErrExpired and sends nothing; one
	// that reaches it ends with ErrExpired between two commits, after a
	// Progress covering what was skipped.
	Expiry time.Time
}

// ErrExpired ends a stream whose Request.Expiry has passed.
var ErrExpired = errors.New("hub: stream expired")

// RequestFromProto converts a validated SubscribeEventsRequest.
func RequestFromProto(face string, m *ringcastv1.SubscribeEventsRequest) Request {
	return Request{
		Face:         face,
		SinceSeq:     m.GetSinceSeq(),
		Epoch:        m.GetInstanceEpoch(),
		SinceFact:    m.GetSinceFact(),
		Topics:       m.GetTopics(),
		Snapshot:     m.GetSnapshot(),
		OnUnservable: m.GetOnUnservable(),
		UntilSeq:     m.GetUntilSeq(),
		EndAtHead:    m.GetEndAtHead(),
	}
}
