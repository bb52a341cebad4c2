// Package edge is what stands between a client and the faces: the bounds on
// what one client may take (Config; per-client limits are package limit's,
// token checks package auth's), the handler every request passes first
// (Handler: read deadline, Host check, CORS, write timeout, header checks),
// HTTP/2 with its reset guard (ServeHTTP2), and the interceptors that make
// a stream's request read like one message.
package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/net/http2"

	"github.com/ringcast/ringcast/server/internal/edge/limit"
	"github.com/ringcast/ringcast/server/internal/settings"
)

// Config bounds what clients may take of the server at its edge: per-client
// streams and publish rate (package limit), connections, and how long a
// connection may idle or a request body may take (docs/limits.md). Zero
// fields take their defaults: the rows of package settings named on them.
type Config struct {
	// MaxStreamsPerClient bounds one client's open streams (Connect,
	// gRPC, gRPC-Web and SSE together). Default settings.MaxStreamsPerClient;
	// negative: no bound.
	MaxStreamsPerClient int
	// PublishRate and PublishBurst are one client's token bucket of
	// commits. Defaults settings.PublishRate and PublishBurst; a negative
	// rate: no bound.
	PublishRate  float64
	PublishBurst int
	// PublishByteRate and PublishByteBurst are one client's token bucket
	// of bytes published (the protobuf size of its Publish and
	// PublishBatch requests). Defaults settings.PublishByteRate and
	// PublishByteBurst; a negative rate: no bound.
	PublishByteRate  int64
	PublishByteBurst int64
	// MaxConns bounds the connections held at once. Default 80% of the
	// open-file limit; negative: no bound.
	MaxConns int
	// MaxConnsPerClient bounds the connections one client (remote IP; an
	// IPv6 client is its /64) holds at once, so no one client takes every
	// slot of MaxConns. Default a quarter of MaxConns (no bound when
	// MaxConns has none); negative: no bound.
	MaxConnsPerClient int
	// IdleTimeout closes a connection with no request in flight (HTTP/1.1
	// keep-alive, HTTP/2 with no open stream, an h2c connection that sent
	// only its preface). Default settings.IdleTimeout.
	IdleTimeout time.Duration
	// ReadTimeout bounds reading a request body (a unary call's message,
	// or a stream's one request message). Default settings.ReadTimeout.
	ReadTimeout time.Duration
	// MaxConcurrentStreams bounds the streams one HTTP/2 connection may
	// have open. Default settings.MaxH2Streams.
	MaxConcurrentStreams int
	// MaxH2Resets bounds the stream resets on one HTTP/2 connection (h2c
	// or TLS) per second, in a bucket of as many: RST_STREAM frames the
	// client sends and those the server sends in answer to the client's
	// frames. Past it the connection gets GOAWAY (ENHANCE_YOUR_CALM); a
	// client cut again within a minute is refused new connections for
	// H2ResetPenalty. Default settings.MaxH2Resets; negative: no bound.
	MaxH2Resets int
	// H2ResetPenalty is how long a client cut for rapid reset twice
	// within a minute is refused new connections (everyone behind its IP,
	// or its IPv6 /64): the first is held unserved, others are closed on
	// accept. A first cut costs only the connection. Default
	// settings.H2ResetPenalty; negative: none.
	H2ResetPenalty time.Duration
}

// WithDefaults returns e with every zero field set to its default.
func (e Config) WithDefaults() Config {
	// The per-client defaults are package limit's.
	lim := limit.Config{MaxStreams: e.MaxStreamsPerClient, PublishRate: e.PublishRate, PublishBurst: e.PublishBurst,
		PublishByteRate: float64(e.PublishByteRate), PublishByteBurst: e.PublishByteBurst}.WithDefaults()
	e.MaxStreamsPerClient, e.PublishRate, e.PublishBurst = lim.MaxStreams, lim.PublishRate, lim.PublishBurst
	e.PublishByteRate, e.PublishByteBurst = int64(lim.PublishByteRate), lim.PublishByteBurst
	if e.MaxConns == 0 {
		e.MaxConns = limit.DefaultMaxConns()
	}
	if e.MaxConnsPerClient == 0 {
		e.MaxConnsPerClient = -1
		if e.MaxConns > 0 {
			e.MaxConnsPerClient = max(1, e.MaxConns/4)
		}
	}
	e.IdleTimeout = settings.IdleTimeout.Or(e.IdleTimeout)
	e.ReadTimeout = settings.ReadTimeout.Or(e.ReadTimeout)
	e.MaxConcurrentStreams = settings.MaxH2Streams.Or(e.MaxConcurrentStreams)
	e.MaxH2Resets = settings.MaxH2Resets.Or(e.MaxH2Resets)
	e.H2ResetPenalty = settings.H2ResetPenalty.Or(e.H2ResetPenalty)
	return e
}

// Validate reports the fields out of their bounds (after WithDefaults):
// each field's row of package settings checks it (Check, the one wording),
// H2ResetPenalty by its lower bound only (an embedder may penalise longer
// than serve's flag allows).
func (e Config) Validate() []error {
	return []error{
		settings.MaxStreamsPerClient.Check(e.MaxStreamsPerClient),
		settings.PublishRate.Check(e.PublishRate),
		settings.PublishBurst.Check(e.PublishBurst),
		settings.PublishByteRate.Check(e.PublishByteRate),
		settings.PublishByteBurst.Check(e.PublishByteBurst),
		settings.MaxConns.Check(e.MaxConns),
		settings.MaxConnsPerClient.Check(e.MaxConnsPerClient),
		settings.IdleTimeout.Check(e.IdleTimeout),
		settings.ReadTimeout.Check(e.ReadTimeout),
		settings.MaxH2Streams.Check(e.MaxConcurrentStreams),
		settings.MaxH2Resets.Check(e.MaxH2Resets),
		settings.H2ResetPenalty.CheckMin(e.H2ResetPenalty),
	}
}

// Limiter returns the per-client limits of e; observe (nil: none) is told
// the name of each limit that refuses a request.
func (e Config) Limiter(observe func(string), log *slog.Logger) *limit.Limiter {
	return limit.New(limit.Config{
		MaxStreams:       e.MaxStreamsPerClient,
		PublishRate:      e.PublishRate,
		PublishBurst:     e.PublishBurst,
		PublishByteRate:  float64(e.PublishByteRate),
		PublishByteBurst: e.PublishByteBurst,
		Observer:         observe,
		Logger:           log,
	})
}

// ServeHTTP2 sets srv up to serve HTTP/2 (h2c and, with TLS, h2) with
// golang.org/x/net/http2, whose server answers a connection error read from
// its connection with GOAWAY: guard (nil: none) watches each connection's
// frames for rapid reset (limit.ResetGuard). An h2c connection is watched
// by the guard's listener, before net/http sees it; a TLS one here, once
// ALPN chose h2, on the decrypted connection.
func ServeHTTP2(srv *http.Server, guard *limit.ResetGuard) error {
	h2 := &http2.Server{} // its settings come from srv (HTTP2, IdleTimeout)
	if err := http2.ConfigureServer(srv, h2); err != nil {
		return fmt.Errorf("configure HTTP/2: %w", err)
	}
	if guard == nil {
		return nil
	}
	srv.TLSNextProto[http2.NextProtoTLS] = func(hs *http.Server, c *tls.Conn, h http.Handler) {
		// As http2.ConfigureServer's own: net/http passes the
		// connection's base context on h.
		var ctx context.Context
		if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
			ctx = bc.BaseContext()
		}
		// net/http hands the connection over without reporting it,
		// and the HTTP/2 server reports the states of the conn it
		// serves, the watched one: report c, the conn net/http reported
		// as new, as in use here, or shutdown would take it for one
		// that never sent a request and close it before its GOAWAY.
		if hs.ConnState != nil {
			hs.ConnState(c, http.StateActive)
		}
		h2.ServeConn(guard.Watch(c), &http2.ServeConnOpts{Context: ctx, Handler: h, BaseConfig: hs})
	}
	return nil
}

// readDoneKey is the request-context key of the func that clears a
// stream's read deadline (withReadDeadline sets it, streamDeadline calls
// it). It must stay a context value: the deadline is the connection's, set
// through the http.ResponseWriter, and only connect knows when a stream's
// request has been read — connect-go gives an interceptor neither the
// ResponseWriter nor any other per-request value from the HTTP layer.
type readDoneKey struct{}

// withReadDeadline is the outermost handler: before the Host check, CORS,
// auth and routing, a request that may carry a body (a declared length,
// chunked, or an HTTP/2 stream its HEADERS did not end) gets a read
// deadline d from now, so no path waits longer than d for a body. A request
// for one of streams' paths carries, in its context, the function that
// clears the deadline once its request has been read (streamDeadline), so
// a long stream is not cut by it. A request without a
// body gets no deadline: there is nothing to wait for, and over HTTP/1.1 a
// deadline would end a long response (an SSE stream) when it passed.
//
// Over HTTP/1.x a response begun before the body was read in full says
// "Connection: close", so it is written at once: net/http would otherwise
// first read the rest of the body (up to 256 KiB), holding the response
// for a body that may never come. After the response, what of the body is
// on its way is read and dropped until the same deadline, then the
// connection closes: closed with the body unread, it would be reset under
// a client still sending it, which would lose the response.
// Over HTTP/2 the server resets a stream answered before its body ended,
// and its connection goes on.
func withReadDeadline(d time.Duration, streams map[string]bool, next http.Handler) http.Handler {
	return &readDeadline{d: d, streams: streams, next: next}
}

// readDeadline is withReadDeadline's handler. (A method rather than a
// closure: the compiler then keeps a request's ResponseController on the
// stack.)
type readDeadline struct {
	d       time.Duration
	streams map[string]bool
	next    http.Handler
}

func (h *readDeadline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		h.next.ServeHTTP(w, r)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.d))
	if h.streams[r.URL.Path] {
		clear := func() { _ = http.NewResponseController(w).SetReadDeadline(time.Time{}) }
		r = r.WithContext(context.WithValue(r.Context(), readDoneKey{}, clear))
	}
	if r.ProtoMajor != 1 {
		h.next.ServeHTTP(w, r)
		return
	}
	u := &unreadBody{ResponseWriter: w, body: r.Body, left: r.ContentLength}
	r.Body = u
	h.next.ServeHTTP(u, r)
}

// unreadBody follows an HTTP/1.x request's body (as its Body) and its
// response (as its ResponseWriter; one allocation for both): a response
// that starts before the body was read in full closes the connection.
type unreadBody struct {
	http.ResponseWriter
	body        io.ReadCloser
	left        int64 // bytes of a declared length not yet read; negative: chunked
	done        bool  // the body was read to its end
	wroteHeader bool
}

func (u *unreadBody) Read(p []byte) (int, error) {
	n, err := u.body.Read(p)
	if u.left > 0 {
		u.left -= int64(n)
	}
	if err == io.EOF || u.left == 0 {
		u.done = true
	}
	return n, err
}

func (u *unreadBody) Close() error { return u.body.Close() }

// header marks the response to close its connection if it starts before
// the body was read.
func (u *unreadBody) header() {
	if u.wroteHeader {
		return
	}
	u.wroteHeader = true
	if !u.done {
		u.ResponseWriter.Header().Set("Connection", "close")
	}
}

func (u *unreadBody) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		u.header()
	}
	u.ResponseWriter.WriteHeader(code)
}

func (u *unreadBody) Write(p []byte) (int, error) {
	u.header()
	return u.ResponseWriter.Write(p)
}

func (u *unreadBody) Flush() { _ = u.FlushError() }

func (u *unreadBody) FlushError() error {
	u.header()
	return http.NewResponseController(u.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (u *unreadBody) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// OneRequestMessage returns the interceptor that answers a server stream's
// request that cannot be read as one message with invalid_argument
// (oneRequestMessage).
func OneRequestMessage() connect.Interceptor { return oneRequestMessage{} }

// oneRequestMessage answers a server stream's request that cannot be read
// as one message — truncated, empty, or holding two messages — with
// invalid_argument (connect-go's own codes for these are internal and
// unimplemented, which would tell a client to retry or give up wrongly).
// Its read deadline is streamDeadline's.
type oneRequestMessage struct{}

func (oneRequestMessage) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }

func (oneRequestMessage) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (oneRequestMessage) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		rc := &requestReader{StreamingHandlerConn: conn}
		err := next(ctx, rc)
		if err != nil && rc.fault != "" && ctx.Err() == nil {
			return connect.NewError(connect.CodeInvalidArgument, errors.New(rc.fault))
		}
		return err
	}
}

// requestReader watches a server stream's request: the first Receive must
// return one message and the second io.EOF.
type requestReader struct {
	connect.StreamingHandlerConn
	received int
	fault    string // why the request could not be read, if it could not
}

func (c *requestReader) Receive(msg any) error {
	err := c.StreamingHandlerConn.Receive(msg)
	c.received++
	switch {
	case c.received == 1 && errors.Is(err, io.EOF):
		c.fault = "the request holds no message; a server stream takes exactly one"
	case c.received == 2 && err == nil:
		c.fault = "the request holds more than one message; a server stream takes exactly one"
	case err != nil && !errors.Is(err, io.EOF):
		c.fault = readFault(err)
	}
	return err
}

// StreamDeadline returns the interceptor that clears a stream's read
// deadline once its request is read (streamDeadline). Install it on every
// handler that serves streams.
func StreamDeadline() connect.Interceptor { return streamDeadline{} }

// streamDeadline clears the read deadline (withReadDeadline) of every
// stream (SubscribeEvents, gRPC health Watch, reflection) once its request
// is read: a server stream's whole body, a bidirectional stream's first
// message (its client sends more as it goes, each answered at once).
type streamDeadline struct{}

func (streamDeadline) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }

func (streamDeadline) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (streamDeadline) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		clear, ok := ctx.Value(readDoneKey{}).(func())
		if !ok {
			return next(ctx, conn)
		}
		return next(ctx, &deadlineConn{StreamingHandlerConn: conn, clear: clear, bidi: conn.Spec().StreamType == connect.StreamTypeBidi})
	}
}

type deadlineConn struct {
	connect.StreamingHandlerConn
	clear func()
	bidi  bool
	done  bool
}

func (c *deadlineConn) Receive(msg any) error {
	err := c.StreamingHandlerConn.Receive(msg)
	// Cleared only once the request was read to its end: a failed read
	// keeps the deadline, which then bounds connect's discarding of the
	// rest of the body too.
	if !c.done && (errors.Is(err, io.EOF) || (err == nil && c.bidi)) {
		c.done = true
		c.clear()
	}
	return err
}
