package rpc

import (
	"context"
	"net/http"
)

// batchWriter holds back the flush connect makes after every streamed
// message while the hub drives a SubscribeEvents stream, and flushes when
// the hub says a batch is complete (hub.Flusher, after each batch of events
// and after each control message). A subscriber that is behind then gets
// its backlog in one write instead of one write per event; a subscriber that
// is live still gets every event at once, since a batch of one is flushed
// as soon as it is written.
//
// It is used by the handler goroutine only.
type batchWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	hold bool // connect's per-message flushes are deferred to flushNow
}

// batchWriterKey is the request-context key of a stream's batchWriter. It
// must stay a context value: the stream's handler writes beneath connect's
// framing (streamSink) and flushes when the hub says, and connect-go hands
// a handler no other per-request value from the HTTP layer — neither the
// http.ResponseWriter nor anything wrapped around it.
type batchWriterKey struct{}

// withBatchWriter gives every stream's request (streams: stream.Paths;
// SubscribeEvents) a batchWriter, which passes flushes through until the
// stream holds them. Other procedures (unary ones above all) pass straight
// through, paying nothing for it.
func withBatchWriter(streams map[string]bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !streams[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		// Unlike the SSE face's, an HTTP/1.1 response here stays chunked,
		// though a batch larger than net/http's 4 KiB connection buffer
		// then takes three write system calls instead of one: with a body
		// ended by the connection's close, a cut connection would look to
		// a client like the end of the body, and Connect clients take a
		// body without its end-of-stream message for a protocol error,
		// not a reason to resume.
		bw := &batchWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
		next.ServeHTTP(bw, r.WithContext(context.WithValue(r.Context(), batchWriterKey{}, bw)))
	})
}

func batchWriterFrom(ctx context.Context) *batchWriter {
	bw, _ := ctx.Value(batchWriterKey{}).(*batchWriter)
	return bw
}

// Flush implements http.Flusher for connect: a no-op while holding.
func (w *batchWriter) Flush() {
	if !w.hold {
		_ = w.rc.Flush()
	}
}

// flushNow pushes everything written so far to the client.
func (w *batchWriter) flushNow() error { return w.rc.Flush() }

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *batchWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
