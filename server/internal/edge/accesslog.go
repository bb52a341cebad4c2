package edge

import (
	"bufio"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcast/ringcast/server/internal/edge/access"
)

// withAccessLog is the outermost handler with --access-log: one line on log
// (at Info) per request once its response has ended — for a stream, when
// the stream ends; for a response whose connection a face took over (a
// parked SSE stream), when that connection closes. The line holds:
//
//	procedure (an RPC: its full path) or path (any other request)
//	code      the RPC's code ("ok", "unauthenticated", …), else the HTTP status
//	status    the HTTP status
//	duration  from the request's arrival to its response's end
//	bytes     response bytes written; bytes_in: request body bytes read
//	client    the client as the per-client limits count it: sub:<token sub>
//	          with auth, else ip:<remote IP>
//	subject   the token's sub, when the request carried a verified token
//
// Without --access-log the handler is not in the chain at all.
func withAccessLog(log *slog.Logger, next http.Handler) http.Handler {
	return &accessLog{log: log, next: next}
}

type accessLog struct {
	log  *slog.Logger
	next http.Handler
}

func (h *accessLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := &accessWriter{ResponseWriter: w, h: h, start: time.Now(), body: r.Body}
	r = r.WithContext(access.WithRecord(r.Context(), &a.rec))
	a.r = r
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = (*accessBody)(a)
	}
	h.next.ServeHTTP(a, r)
	if a.hijacked.Load() {
		return // logged when the connection closes (accessConn)
	}
	a.line()
}

// accessWriter follows one request for its access log line: its response
// (as its ResponseWriter), its body (as accessBody) and its record (one
// allocation for all three).
type accessWriter struct {
	http.ResponseWriter
	h        *accessLog
	r        *http.Request
	start    time.Time
	rec      access.Record
	body     io.ReadCloser
	bytesIn  atomic.Int64
	bytesOut atomic.Int64 // written after a takeover on other goroutines
	status   int
	hijacked atomic.Bool
	once     sync.Once
}

func (a *accessWriter) WriteHeader(code int) {
	if a.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *accessWriter) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	n, err := a.ResponseWriter.Write(p)
	a.bytesOut.Add(int64(n))
	return n, err
}

func (a *accessWriter) Flush() { _ = a.FlushError() }

func (a *accessWriter) FlushError() error {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return http.NewResponseController(a.ResponseWriter).Flush()
}

// Hijack hands the connection over (http.ResponseController.Hijack) and
// keeps counting what is written to it; the line is written when it closes.
func (a *accessWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(a.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	a.hijacked.Store(true)
	return &accessConn{Conn: c, a: a}, rw, nil
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (a *accessWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// accessBody is the request body of an accessWriter's request, counted.
type accessBody accessWriter

func (b *accessBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.bytesIn.Add(int64(n))
	return n, err
}

func (b *accessBody) Close() error { return b.body.Close() }

// accessConn is a connection taken over from the HTTP server: its writes
// are counted, and closing it writes the line.
type accessConn struct {
	net.Conn
	a *accessWriter
}

func (c *accessConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.a.bytesOut.Add(int64(n))
	return n, err
}

func (c *accessConn) Close() error {
	err := c.Conn.Close()
	c.a.line()
	return err
}

// NetConn is the connection beneath (under TLS, beneath its TLS layer), as
// tls.Conn's NetConn: closing it need not say so to a client that may not
// be reading. The line is then written by Close, which the face still calls.
func (c *accessConn) NetConn() net.Conn {
	if nc, ok := c.Conn.(interface{ NetConn() net.Conn }); ok {
		return nc.NetConn()
	}
	return c.Conn
}

// line writes the request's line, once.
func (a *accessWriter) line() {
	a.once.Do(func() {
		r := a.r
		status := a.status
		if status == 0 {
			status = http.StatusOK // nothing written: net/http answers 200
		}
		code, isRPC := a.rec.Code()
		what := "path"
		if isRPC || isRPCContentType(r.Header.Get("Content-Type")) {
			what = "procedure"
		}
		codeName := strconv.Itoa(status)
		if isRPC {
			codeName = access.CodeName(code)
		}
		sub, authenticated := a.rec.Subject()
		client := "sub:" + sub
		if !authenticated {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil {
				host = r.RemoteAddr
			}
			client = "ip:" + host
		}
		attrs := []slog.Attr{
			slog.String(what, r.URL.Path),
			slog.String("code", codeName),
			slog.Int("status", status),
			slog.Duration("duration", time.Since(a.start)),
			slog.Int64("bytes", a.bytesOut.Load()),
			slog.Int64("bytes_in", a.bytesIn.Load()),
			slog.String("client", client),
		}
		if authenticated {
			attrs = append(attrs, slog.String("subject", sub))
		}
		a.h.log.LogAttrs(r.Context(), slog.LevelInfo, "access", attrs...)
	})
}

// isRPCContentType reports whether a request's content type is one of an
// RPC: gRPC, gRPC-Web, Connect streaming or Connect unary.
func isRPCContentType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "application/grpc") || strings.HasPrefix(mt, "application/connect+") ||
		mt == "application/proto" || mt == "application/json"
}
