package rpc

import (
	"errors"
	"mime"
	"strings"

	"connectrpc.com/connect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/offstack"
	"github.com/ringcast/ringcast/server/internal/face/stream"
)

// streamSink sends a stream's responses. Shared ring events take the direct
// path when the stream has a batchWriter and speaks one of the caching
// codecs: the event's cached envelope (eventCodec.envelope) is appended to
// a batch buffer, and Flush writes the whole batch with one Write and one
// flush, with no per-message work in connect (no envelope struct, no
// prefix write, no copy into connect's buffer). A stream's own responses
// (control messages, filtered commits) are encoded into the same buffer.
// Every message until connect has sent the first one (and with it the
// response headers), and every message of a stream without the direct
// path, goes through connect's Send, after whatever the batch buffer
// holds, so the order is kept.
//
// The buffer is bounded by bytes (hub.MaxBatchBytes): what it holds is
// written (not flushed) before an event's envelope would take it past the
// bound, and once a stream's own message takes it there; an envelope as
// large as the bound is written from the event's cache without a copy.
type streamSink struct {
	conn   connect.StreamingHandlerConn
	shared sharedEvent
	batch  *batchWriter // nil: connect flushes every message
	codec  *eventCodec  // the response codec when it caches envelopes; nil: always through connect
	// started: connect has sent a message, so the response headers are
	// written and raw envelopes may follow.
	started bool
	// flushed: the first Flush, which writes the response headers, is done.
	flushed bool
	pending stream.Batch // envelopes waiting for Flush
}

var (
	_ hub.EventSink = (*streamSink)(nil)
	_ hub.Flusher   = (*streamSink)(nil)
)

func newStreamSink(conn connect.StreamingHandlerConn, batch *batchWriter) *streamSink {
	s := &streamSink{conn: conn, batch: batch}
	if batch != nil {
		s.codec = responseCodec(conn.RequestHeader().Get("Content-Type"))
	}
	return s
}

// responseCodec is the caching codec a stream with this request content
// type is answered in, or nil when its framing is not the plain envelope
// (e.g. gRPC-Web's base64 text form) or its codec is not one of ours.
func responseCodec(contentType string) *eventCodec {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil
	}
	var sub string
	switch {
	case mt == "application/grpc", mt == "application/grpc-web":
		sub = "proto"
	case strings.HasPrefix(mt, "application/connect+"):
		sub = strings.TrimPrefix(mt, "application/connect+")
	case strings.HasPrefix(mt, "application/grpc+"):
		sub = strings.TrimPrefix(mt, "application/grpc+")
	case strings.HasPrefix(mt, "application/grpc-web+"):
		sub = strings.TrimPrefix(mt, "application/grpc-web+")
	}
	switch sub {
	case "proto":
		return protoCodec
	case "json":
		return jsonCodec
	}
	return nil
}

// SendEvent sends ev's shared response: by the direct path when it can,
// through connect otherwise.
func (s *streamSink) SendEvent(ev *hub.Event) error {
	if s.codec == nil || !s.started {
		s.shared = sharedEvent{SubscribeEventsResponse: ev.Response(), ev: ev}
		err := s.send(&s.shared)
		s.shared = sharedEvent{} // do not pin the event
		return err
	}
	b, err := s.codec.envelope(ev)
	if err != nil {
		return err
	}
	return s.pending.Add(b, s.out)
}

// Send sends a stream's own response (a control message, a filtered or
// snapshot commit): encoded into the batch buffer by the direct path when
// it can — on the stream's stack, which connect's deeper Send path could
// grow (appendJSON) — through connect otherwise.
func (s *streamSink) Send(r *ringcastv1.SubscribeEventsResponse) error {
	if s.codec == nil || !s.started {
		return s.send(r)
	}
	buf := s.pending.Buffer()
	b, err := appendEnvelope(*buf, r, s.codec.append)
	*buf = b
	if err != nil {
		// What was buffered before it still goes out.
		return errors.Join(err, s.writeBuffered())
	}
	if hub.MaxBatchBytes.Alone(len(b)) {
		return s.pending.Out(s.out)
	}
	return nil
}

// send sends msg through connect, after the batch buffer.
func (s *streamSink) send(msg any) error {
	if err := s.writeBuffered(); err != nil {
		return err
	}
	if !s.started {
		// The first message writes the response headers (HTTP/1.1 clones
		// and writes them on the calling stack): off the stream's stack,
		// as in Flush.
		s.started = true
		return offstack.Run(func() error { return s.conn.Send(msg) })
	}
	return s.conn.Send(msg)
}

// Flush writes the batch (the buffered envelopes in one Write) and pushes
// it to the client.
func (s *streamSink) Flush() error {
	if s.batch == nil {
		return nil
	}
	if !s.flushed {
		// The first flush may write the response headers, on net/http's
		// deepest write path: keep it off the stream's stack (package offstack).
		s.flushed = true
		return offstack.Run(func() error {
			if err := s.writeBuffered(); err != nil {
				return err
			}
			return s.batch.flushNow()
		})
	}
	if err := s.writeBuffered(); err != nil {
		return err
	}
	return s.batch.flushNow()
}

// out writes b to the response, unflushed. The first write of the body may
// write the response headers, on net/http's deepest write path: it runs
// off the stream's stack, as the first Flush does.
func (s *streamSink) out(b []byte) error {
	if !s.flushed {
		s.flushed = true
		return offstack.Run(func() error {
			_, err := s.batch.ResponseWriter.Write(b)
			return err
		})
	}
	_, err := s.batch.ResponseWriter.Write(b)
	return err
}

// writeBuffered writes the buffered envelopes, if any, and ends the batch.
func (s *streamSink) writeBuffered() error { return s.pending.Done(s.write) }

// write writes b to the response, unflushed.
func (s *streamSink) write(b []byte) error {
	_, err := s.batch.ResponseWriter.Write(b)
	return err
}
