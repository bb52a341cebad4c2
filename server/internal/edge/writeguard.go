package edge

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcast/ringcast/server/internal/edge/limit"
)

// WriteGuard owns the write timeout on every face: a stream that cannot
// write for timeout is cut. A subscriber that stops reading fills its
// socket buffers, its stream's next write blocks, and the guard aborts that
// write (and so that stream) with a past write deadline, without touching
// any other stream. It guards every response's writes (Handler) and, once
// a face takes a response's connection over (a parked SSE stream, through
// http.ResponseController.Hijack), the connection's writes until it is
// closed.
//
// A per-write deadline set before each write would also do, but an HTTP/2
// stream deadline fires even while the stream is idle between events, so it
// would have to be set and cleared around every write. Instead each write
// records when it started (two atomic stores), and one sweeper checks all
// guarded writers every timeout/4: a write is cut after between timeout and
// 1.25×timeout.
type WriteGuard struct {
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	writers map[*guardedWriter]struct{} // guarded by mu; a writer leaves before its handler returns
	conns   map[*guardedConn]struct{}   // guarded by mu; taken over, until closed
	cuts    atomic.Uint64               // responses cut (ringcast_write_timeout_cuts_total)
}

// Cuts is how many responses were cut (ringcast_write_timeout_cuts_total).
func (g *WriteGuard) Cuts() uint64 { return g.cuts.Load() }

// NewWriteGuard returns a guard that cuts a write blocked for timeout; it
// logs each cut to log.
func NewWriteGuard(timeout time.Duration, log *slog.Logger) *WriteGuard {
	return &WriteGuard{timeout: timeout, log: log,
		writers: make(map[*guardedWriter]struct{}), conns: make(map[*guardedConn]struct{})}
}

// wrap guards next's writes.
func (g *WriteGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw := &guardedWriter{ResponseWriter: w, g: g}
		g.mu.Lock()
		g.writers[gw] = struct{}{}
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			delete(g.writers, gw)
			g.mu.Unlock()
		}()
		next.ServeHTTP(gw, r)
	})
}

// Run sweeps until stop is closed.
func (g *WriteGuard) Run(stop <-chan struct{}) {
	t := time.NewTicker(g.timeout / 4)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			g.sweep(time.Now())
		}
	}
}

func (g *WriteGuard) sweep(now time.Time) {
	limit := now.Add(-g.timeout).UnixNano()
	g.mu.Lock()
	defer g.mu.Unlock()
	for w := range g.writers {
		if since := w.clock.since.Load(); since != 0 && since < limit {
			// Aborts the blocked write; the stream's Send then fails.
			_ = w.controller().SetWriteDeadline(now)
			g.cut(&w.clock, now, since)
		}
	}
	for c := range g.conns {
		if since := c.clock.since.Load(); since != 0 && since < limit {
			_ = c.Conn.SetWriteDeadline(now)
			g.cut(&c.clock, now, since)
		}
	}
}

// cut counts and logs the cut of c's write, blocked since since (Unix ns).
func (g *WriteGuard) cut(c *writeClock, now time.Time, since int64) {
	if !c.cut.Swap(true) {
		g.cuts.Add(1)
	}
	g.log.Info("cut a response whose write was blocked", "after", now.Sub(time.Unix(0, since)).Round(time.Millisecond))
}

// writeClock records when a writer's write started (0 = not writing).
type writeClock struct {
	cut   atomic.Bool // counted as cut
	since atomic.Int64
}

func (c *writeClock) start() { c.since.Store(time.Now().UnixNano()) }
func (c *writeClock) end()   { c.since.Store(0) }

// guardedWriter is a guarded response writer.
type guardedWriter struct {
	http.ResponseWriter
	g     *WriteGuard
	clock writeClock
}

// controller controls the underlying writer. It is made where it is used
// (on the caller's stack) rather than kept, which would cost every request
// an allocation.
func (w *guardedWriter) controller() *http.ResponseController {
	return http.NewResponseController(w.ResponseWriter)
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	w.clock.start()
	defer w.clock.end()
	return w.ResponseWriter.Write(p)
}

func (w *guardedWriter) Flush() { _ = w.FlushError() }

// FlushError flushes and reports a failed (or cut) write, so that
// http.ResponseController.Flush — and through it the stream — sees it.
func (w *guardedWriter) FlushError() error {
	w.clock.start()
	defer w.clock.end()
	return w.controller().Flush()
}

// Hijack takes the connection over from the HTTP server (for
// http.ResponseController.Hijack) and keeps its writes guarded until it is
// closed: a face that writes to it itself is cut as any response is.
func (w *guardedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := w.controller().Hijack()
	if err != nil {
		return nil, nil, err
	}
	// An HTTP/1 connection taken over needs no HTTP/2 reset watch: a
	// parked stream holds one connection fewer wrapper.
	gc := &guardedConn{Conn: limit.Unwatched(c), g: w.g}
	w.g.mu.Lock()
	w.g.conns[gc] = struct{}{}
	w.g.mu.Unlock()
	return gc, rw, nil
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// guardedConn is a connection taken over from the HTTP server (Hijack),
// guarded until it is closed.
type guardedConn struct {
	net.Conn
	g      *WriteGuard
	clock  writeClock
	closed atomic.Bool // not a sync.Once: a parked stream holds one of these, 16 bytes smaller
}

func (c *guardedConn) Write(p []byte) (int, error) {
	c.clock.start()
	defer c.clock.end()
	return c.Conn.Write(p)
}

func (c *guardedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.g.mu.Lock()
		delete(c.g.conns, c)
		c.g.mu.Unlock()
	}
	return c.Conn.Close()
}

// NetConn is the connection beneath: under TLS, the one beneath its TLS
// layer (as tls.Conn's NetConn, also through the access log's counting
// connection), so that closing it need not say so to a client that may not
// be reading.
func (c *guardedConn) NetConn() net.Conn {
	if nc, ok := c.Conn.(interface{ NetConn() net.Conn }); ok {
		return nc.NetConn()
	}
	return c.Conn
}
