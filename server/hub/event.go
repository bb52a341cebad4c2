package hub

import (
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// Event is one positioned entry of the ring: a commit or a server status.
//
// An Event is immutable once published and shared by every subscriber:
// nothing may modify it, its response or the facts it holds. Only its cache
// of encodings of that response fills in, once per encoding (Encoded).
type Event struct {
	Seq  uint64
	Time time.Time
	// resp is the complete response an unfiltered subscriber sends for this
	// event (seq, epoch, time and payload), built once at publish.
	resp *ringcastv1.SubscribeEventsResponse
	// encoded caches resp in each Encoding, filled on first use.
	encoded [numEncodings]atomic.Pointer[[]byte]
}

// Encoding names a wire encoding of an event's shared response, cached on
// the event (see Encoded).
type Encoding uint8

// The cached encodings.
const (
	EncodingProto Encoding = iota // protobuf binary
	EncodingJSON                  // protobuf JSON
	EncodingSSE                   // a Server-Sent Events frame
	numEncodings
)

// Encoded returns the shared response in encoding enc, calling marshal to
// build it on first use: every subscriber sending the event unchanged then
// shares one encoding per wire format instead of encoding it per send.
// The event is immutable, so the bytes never go stale. Concurrent first
// uses may each call marshal; one result is kept and returned from then on.
// The returned bytes are shared and must not be modified.
func (e *Event) Encoded(enc Encoding, marshal func(*ringcastv1.SubscribeEventsResponse) ([]byte, error)) ([]byte, error) {
	slot := &e.encoded[enc]
	if b := slot.Load(); b != nil {
		return *b, nil
	}
	b, err := marshal(e.resp)
	if err != nil {
		return nil, err
	}
	if !slot.CompareAndSwap(nil, &b) {
		b = *slot.Load()
	}
	return b, nil
}

// Response is the shared, read-only response for this event.
func (e *Event) Response() *ringcastv1.SubscribeEventsResponse { return e.resp }

// Commit is the event's commit, or nil for a status event.
func (e *Event) Commit() *ringcastv1.Commit { return e.resp.GetCommit() }

// Status is the event's server status, or nil for a commit.
func (e *Event) Status() *ringcastv1.ServerStatus { return e.resp.GetServerStatus() }

func newCommitEvent(epoch, seq uint64, at time.Time, facts []*ringcastv1.Fact) *Event {
	return &Event{Seq: seq, Time: at, resp: &ringcastv1.SubscribeEventsResponse{
		Seq:           seq,
		InstanceEpoch: epoch,
		EventTime:     timestamppb.New(at),
		Event: &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{
			Facts:     facts,
			FactCount: uint32(len(facts)),
		}},
	}}
}

func newStatusEvent(epoch, seq uint64, at time.Time, status *ringcastv1.ServerStatus) *Event {
	return &Event{Seq: seq, Time: at, resp: &ringcastv1.SubscribeEventsResponse{
		Seq:           seq,
		InstanceEpoch: epoch,
		EventTime:     timestamppb.New(at),
		Event:         &ringcastv1.SubscribeEventsResponse_ServerStatus{ServerStatus: status},
	}}
}

// commitResponse builds a per-stream response for a commit carrying only
// some of its facts (a filter or a partial resume).
func commitResponse(epoch, seq uint64, at *timestamppb.Timestamp, facts []*ringcastv1.Fact, factCount uint32) *ringcastv1.SubscribeEventsResponse {
	return &ringcastv1.SubscribeEventsResponse{
		Seq:           seq,
		InstanceEpoch: epoch,
		EventTime:     at,
		Event: &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{
			Facts:     facts,
			FactCount: factCount,
		}},
	}
}
