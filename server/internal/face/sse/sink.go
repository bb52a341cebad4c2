package sse

import (
	"net"
	"net/http"
	"strconv"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/stream"
)

// sink turns one stream's hub responses into SSE events. It buffers and
// writes on Flush, which the hub calls after each batch and each control
// message: a batch goes out in one Write and one flush. The buffer comes
// from a pool and goes back at each Flush, so an idle stream holds none.
// It is owned by the goroutine running the stream.
//
// A sink that may park (parkingSink) takes its connection over from the
// HTTP server when its stream first parks: from then on it writes to conn
// itself (whose writes the server's write guard still times out), and its
// stream runs on one of the hub's workers only while it has something to
// do.
type sink struct {
	w       http.ResponseWriter // nil once the connection is taken over
	pending stream.Batch        // what waits for Flush
	h       *Handler

	// A parkingSink's:
	refused bool     // the response could not be taken over
	conn    net.Conn // the connection once taken over; nil before
	release func()   // the stream slot's release (WithStreamSlots), End's once taken over
}

func newSink(w http.ResponseWriter) *sink {
	return &sink{w: w}
}

// write adds frame b to the batch (stream.Batch.Add: bounded by bytes, a
// long replay or snapshot goes out in pieces).
func (s *sink) write(b []byte) error { return s.pending.Add(b, s.out) }

// out writes b to the response, or, once the connection is taken over, to
// the connection (Hijack's, on which the server's write guard cuts a write
// blocked for the write timeout, as on the response).
func (s *sink) out(b []byte) error {
	if s.conn == nil {
		_, err := s.w.Write(b)
		return err
	}
	_, err := s.conn.Write(b)
	return err
}

func (s *sink) writeString(str string) { s.pending.AppendString(str) }

// controller controls the response. It is made where it is used (on the
// caller's stack) rather than kept, which would cost every stream, a
// parked one included, its bytes.
func (s *sink) controller() *http.ResponseController { return http.NewResponseController(s.w) }

var (
	_ hub.EventSink = (*sink)(nil)
	_ hub.Flusher   = (*sink)(nil)
)

// SendEvent writes a ring event sent unchanged: its frame is rendered once
// and shared by every stream (the event is immutable).
func (s *sink) SendEvent(ev *hub.Event) error {
	b, err := eventFrame(ev)
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
		b = []byte(": resync " + names.ReasonName(ev.ResyncRequired.GetReason()) + "; reconnect with Last-Event-ID\n\n")
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
	if err := s.pending.Done(s.out); err != nil {
		return err
	}
	if s.conn != nil {
		return nil // written straight to the connection
	}
	return s.controller().Flush()
}

// parkingSink is the sink of a stream that may park (hub.Parker): one over
// HTTP/1.x, on a Handler WithParking.
type parkingSink struct{ *sink }

var _ hub.Parker = parkingSink{}

// Park takes the connection over from the HTTP server, the first time its
// stream parks, so that the handler can return. The response has no
// chunked encoding (start), so the body goes on as raw bytes on the
// connection. Should the response refuse to be taken over, the stream
// waits on its goroutine from then on.
func (p parkingSink) Park() bool {
	s := p.sink
	if s.conn != nil {
		return true
	}
	if s.refused {
		return false
	}
	// Listed before the HTTP server lets go of the connection, so that
	// Close finds it. (Shutdown waits for the stream on the hub's count,
	// which holds it from Subscribe to the end of End.)
	s.h.addParked(s)
	// Hijack flushes the response, and the writer it returns is empty:
	// the connection is all there is.
	conn, _, err := s.controller().Hijack()
	if err != nil {
		s.refused = true
		s.h.removeParked(s)
		return false
	}
	s.h.mu.Lock() // Close reads it
	s.conn = conn
	s.h.mu.Unlock()
	s.w = nil
	return true
}

// End ends a parked stream's response: as ServeHTTP does after Subscribe,
// then the connection closes, which ends the body.
func (p parkingSink) End(err error) {
	s := p.sink
	s.h.ended(s, err, false)
	_ = s.conn.Close()
	s.release()
	s.h.removeParked(s)
}
