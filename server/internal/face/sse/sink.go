package sse

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge/limit"
)

// sink turns one stream's hub responses into SSE events. It buffers and
// writes on Flush, which the hub calls after each batch and each control
// message: a batch goes out in one Write and one flush. The buffer comes
// from a pool and goes back at each Flush, so an idle stream holds none.
// It is owned by the goroutine running the stream.
//
// A sink that may park (parkingSink) takes its connection over from the
// HTTP server when its stream first parks: from then on it writes to conn
// itself, each write starting with at least the write timeout before its
// deadline (and cut within 1.25× it), and its stream runs on one of the
// hub's workers only while it has something to do.
type sink struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf *[]byte // what waits for Flush; nil between batches
	h   *Handler

	// A parkingSink's:
	ctx      context.Context // the request's, for its stream slot (limit.KeepStream)
	refused  bool            // the response could not be taken over
	conn     net.Conn        // the connection once taken over; nil before
	deadline time.Time       // conn's write deadline
	release  func()          // the stream slot's release, once taken over
}

func newSink(w http.ResponseWriter) *sink {
	return &sink{w: w, rc: http.NewResponseController(w)}
}

// bufPool holds batch buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledBuf is the largest buffer returned to bufPool: one that held a
// whole batch (hub.MaxBatchBytes), with the room append left.
const maxPooledBuf = 2 * hub.MaxBatchBytes

// write appends frame b to the batch. The batch is bounded by bytes
// (hub.MaxBatchBytes, on every face): what it holds is written (not
// flushed) before b would take it past the bound, so a long replay or
// snapshot goes out in pieces of up to that size, and a frame as large as
// the bound is written from where it lies (a ring event's cached frame)
// without a copy.
func (s *sink) write(b []byte) error {
	if s.buf != nil && len(*s.buf) > 0 && len(*s.buf)+len(b) > hub.MaxBatchBytes {
		err := s.out(*s.buf)
		*s.buf = (*s.buf)[:0]
		if err != nil {
			return err
		}
	}
	if len(b) >= hub.MaxBatchBytes {
		return s.out(b)
	}
	if s.buf == nil {
		s.buf = bufPool.Get().(*[]byte)
	}
	*s.buf = append(*s.buf, b...)
	return nil
}

// out writes b to the response, or, once the connection is taken over, to
// the connection with a deadline: a client that stopped reading cuts only
// its own stream, as the server's write guard does for the others.
func (s *sink) out(b []byte) error {
	if s.conn == nil {
		_, err := s.w.Write(b)
		return err
	}
	// The deadline is set 1.25× the timeout ahead, and moved only once
	// less than the timeout is left: every write starts with at least the
	// timeout before it, and a blocked one is cut within 1.25× it, as on
	// streams with a goroutine (docs/protocol.md), without a deadline
	// change per write.
	if now := time.Now(); s.deadline.Sub(now) < s.h.writeTimeout {
		s.deadline = now.Add(s.h.writeTimeout + s.h.writeTimeout/4)
		_ = s.conn.SetWriteDeadline(s.deadline)
	}
	_, err := s.conn.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.h.onCut()
		s.h.log.Info("cut a parked SSE stream whose write was blocked", "for at least", s.h.writeTimeout)
	}
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
			err = s.out(*b)
		}
		if cap(*b) <= maxPooledBuf {
			*b = (*b)[:0]
			bufPool.Put(b)
		}
		if err != nil {
			return err
		}
	}
	if s.conn != nil {
		return nil // written straight to the connection
	}
	return s.rc.Flush()
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
	// Counted before the HTTP server stops counting the connection, so
	// that shutdown, which waits for the server and then for the parked
	// streams, always finds the stream in one or the other.
	s.h.addParked(s)
	// Hijack flushes the response, and the writer it returns is empty:
	// the connection is all there is.
	conn, _, err := s.rc.Hijack()
	if err != nil {
		s.refused = true
		s.h.removeParked(s)
		return false
	}
	s.h.mu.Lock() // Close reads it
	s.conn = conn
	s.h.mu.Unlock()
	s.w, s.rc = nil, nil
	s.release = limit.KeepStream(s.ctx)
	s.ctx = nil
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
