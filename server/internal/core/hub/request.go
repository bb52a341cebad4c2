package hub

import (
	"errors"
	"fmt"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// Request is a subscribe, independent of the face it arrived on.
type Request struct {
	Face      string // the name of the face it arrived on (e.g. rpc.Face): an Observer label only
	SinceSeq  uint64
	Epoch     uint64
	SinceFact uint32
	// SinceFingerprint is the fingerprint of the commit at SinceSeq that
	// the cursor holds (0: none, served by Epoch and SinceSeq alone).
	SinceFingerprint uint32
	Topics           []string
	Snapshot         ringcastv1.Snapshot
	OnUnservable     ringcastv1.OnUnservable
	UntilSeq         uint64
	EndAtHead        bool
	// MalformedCursor says the face received a cursor it could not parse
	// (an SSE Last-Event-ID): the hub answers REASON_MALFORMED_CURSOR.
	MalformedCursor bool // beside EndAtHead: one word for both (a parked stream holds its Request)
	// SinceTime, when set with SinceSeq 0, starts the stream at the first
	// retained commit whose event time is at or after it, instead of a
	// snapshot (docs/protocol.md, "Starting from a time"). The faces refuse
	// it with SinceSeq > 0; the hub ignores it then.
	SinceTime time.Time
	// Expiry, when set, is the instant from which the credentials the
	// stream was opened with are refused: a stream whose Expiry has passed
	// when it starts ends at once with ErrExpired and sends nothing; one
	// that reaches it ends with ErrExpired between two commits, after a
	// Progress covering what was skipped.
	Expiry time.Time

	// admission is what Admit decided for the stream (nil: not admitted
	// yet); Subscribe serves the request as it says.
	admission *admitted
}

// ErrExpired ends a stream whose Request.Expiry has passed.
var ErrExpired = errors.New("hub: stream expired")

// ErrInvalidRequest is wrapped by RequestFromProto's refusal of a request
// the hub cannot serve as asked: every face answers it as invalid.
var ErrInvalidRequest = errors.New("invalid request")

// invalidSinceTime is RequestFromProto's refusal of a since_time, out of
// line: a stream's goroutine keeps the stack its deepest call needed.
//
//go:noinline
func invalidSinceTime(seconds int64, nanos int32) error {
	return fmt.Errorf("%w: since_time is not a valid timestamp (seconds %d, nanos %d): a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z, nanos 0 to 999999999",
		ErrInvalidRequest, seconds, nanos)
}

// RequestFromProto converts a validated SubscribeEventsRequest. A
// since_time that is not a valid google.protobuf.Timestamp (nanos outside
// 0..999,999,999, or a time outside years 1 to 9999: binary protobuf can
// carry any, JSON none) is refused with an error wrapping
// ErrInvalidRequest, on every face: read as a time it would start the
// stream anywhere, the whole history included.
func RequestFromProto(face string, m *ringcastv1.SubscribeEventsRequest) (Request, error) {
	var since time.Time
	if ts := m.GetSinceTime(); ts != nil {
		if !ts.IsValid() {
			return Request{}, invalidSinceTime(ts.GetSeconds(), ts.GetNanos())
		}
		since = ts.AsTime()
		if since.IsZero() {
			// 0001-01-01T00:00:00Z, the earliest Timestamp, would read as
			// unset: any time before every event starts the same way.
			since = since.Add(time.Nanosecond)
		}
	}
	return Request{
		Face:             face,
		SinceSeq:         m.GetSinceSeq(),
		Epoch:            m.GetInstanceEpoch(),
		SinceFact:        m.GetSinceFact(),
		SinceFingerprint: m.GetSinceFingerprint(),
		Topics:           m.GetTopics(),
		Snapshot:         m.GetSnapshot(),
		OnUnservable:     m.GetOnUnservable(),
		UntilSeq:         m.GetUntilSeq(),
		EndAtHead:        m.GetEndAtHead(),
		SinceTime:        since,
	}, nil
}
