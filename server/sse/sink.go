package sse

import (
	"bufio"
	"net/http"
	"strconv"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/hub"
)

// sink turns one stream's hub responses into SSE events. It buffers and
// writes on Flush, which the hub calls after each batch and each control
// message. It is owned by the stream's goroutine.
type sink struct {
	w  *bufio.Writer
	rc *http.ResponseController
}

var (
	_ hub.EventSink = (*sink)(nil)
	_ hub.Flusher   = (*sink)(nil)
)

// SendEvent writes a ring event sent unchanged: its frame is rendered once
// and shared by every stream (the event is immutable).
func (s *sink) SendEvent(ev *hub.Event) error {
	b, err := ev.Encoded(hub.EncodingSSE, frame)
	if err != nil {
		return err
	}
	_, err = s.w.Write(b)
	return err
}

func (s *sink) Send(r *ringcastv1.SubscribeEventsResponse) error {
	var b []byte
	var err error
	switch ev := r.GetEvent().(type) {
	case *ringcastv1.SubscribeEventsResponse_Heartbeat:
		hb := ev.Heartbeat
		b = []byte(": heartbeat head=" + strconv.FormatUint(hb.GetHeadSeq(), 10) +
			" oldest=" + strconv.FormatUint(hb.GetOldestSeq(), 10) + "\n\n")
	case *ringcastv1.SubscribeEventsResponse_ResyncRequired:
		// Only a lapped live stream gets here (every SSE subscribe asks
		// for SNAPSHOT_INLINE). The hub ends the stream right after; the
		// response ends, and EventSource reconnects with its last id,
		// which is then too old and served as a gap.
		b = []byte(": resync " + reasonName(ev.ResyncRequired.GetReason()) + "; reconnect with Last-Event-ID\n\n")
	default:
		// Per-stream responses: filtered or snapshot commits, Progress,
		// CaughtUp, Gap.
		b, err = frame(r)
	}
	if err != nil {
		return err
	}
	_, err = s.w.Write(b)
	return err
}

// Flush writes what is buffered and pushes it to the client.
func (s *sink) Flush() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.rc.Flush()
}
