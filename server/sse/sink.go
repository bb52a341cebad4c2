package sse

import (
	"net/http"
	"strconv"
	"sync"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/hub"
)

// sink turns one stream's hub responses into SSE events. It buffers and
// writes on Flush, which the hub calls after each batch and each control
// message: a batch goes out in one Write and one flush. The buffer comes
// from a pool and goes back at each Flush, so an idle stream holds none.
// It is owned by the stream's goroutine.
type sink struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf *[]byte // what waits for Flush; nil between batches
}

func newSink(w http.ResponseWriter) *sink {
	return &sink{w: w, rc: http.NewResponseController(w)}
}

// bufPool holds batch buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledBuf is the largest buffer returned to bufPool.
const maxPooledBuf = 256 << 10

// writeAt is how much a batch buffers before it is written (not flushed)
// on its own: a long replay or snapshot is written in pieces of this size.
const writeAt = 64 << 10

// write appends b to the batch.
func (s *sink) write(b []byte) error {
	if s.buf == nil {
		s.buf = bufPool.Get().(*[]byte)
	}
	*s.buf = append(*s.buf, b...)
	if len(*s.buf) < writeAt {
		return nil
	}
	_, err := s.w.Write(*s.buf)
	*s.buf = (*s.buf)[:0]
	return err
}

func (s *sink) writeString(str string) {
	if s.buf == nil {
		s.buf = bufPool.Get().(*[]byte)
	}
	*s.buf = append(*s.buf, str...)
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
	return s.write(b)
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
	return s.write(b)
}

// Flush writes what is buffered, in one Write, and pushes it to the client.
func (s *sink) Flush() error {
	if s.buf != nil {
		b := s.buf
		s.buf = nil
		var err error
		if len(*b) > 0 {
			_, err = s.w.Write(*b)
		}
		if cap(*b) <= maxPooledBuf {
			*b = (*b)[:0]
			bufPool.Put(b)
		}
		if err != nil {
			return err
		}
	}
	return s.rc.Flush()
}
