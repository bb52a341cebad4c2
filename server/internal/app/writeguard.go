package app

import (
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// writeGuard cuts responses whose writes block for longer than timeout: a
// subscriber that stops reading fills its socket buffers, its stream's next
// write blocks, and the guard aborts that write (and so that stream) with a
// past write deadline, without touching any other stream.
//
// A per-write deadline set before each write would also do, but an HTTP/2
// stream deadline fires even while the stream is idle between events, so it
// would have to be set and cleared around every write. Instead each write
// records when it started (two atomic stores), and one sweeper checks all
// guarded writers every timeout/4: a write is cut after between timeout and
// 1.25×timeout.
type writeGuard struct {
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	writers map[*guardedWriter]struct{} // guarded by mu; a writer leaves before its handler returns
	cuts    atomic.Uint64               // responses cut (ringcast_write_timeout_cuts_total)
}

func newWriteGuard(timeout time.Duration, log *slog.Logger) *writeGuard {
	return &writeGuard{timeout: timeout, log: log, writers: make(map[*guardedWriter]struct{})}
}

// wrap guards next's writes.
func (g *writeGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw := &guardedWriter{ResponseWriter: w}
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

// run sweeps until stop is closed.
func (g *writeGuard) run(stop <-chan struct{}) {
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

func (g *writeGuard) sweep(now time.Time) {
	limit := now.Add(-g.timeout).UnixNano()
	g.mu.Lock()
	defer g.mu.Unlock()
	for w := range g.writers {
		if since := w.since.Load(); since != 0 && since < limit {
			// Aborts the blocked write; the stream's Send then fails.
			_ = w.controller().SetWriteDeadline(now)
			if !w.cut.Swap(true) {
				g.cuts.Add(1)
			}
			g.log.Info("cut a response whose write was blocked", "after", now.Sub(time.Unix(0, since)).Round(time.Millisecond))
		}
	}
}

// guardedWriter records when each write started (0 = not writing).
type guardedWriter struct {
	http.ResponseWriter
	cut   atomic.Bool // counted as cut
	since atomic.Int64
}

// controller controls the underlying writer. It is made where it is used
// (on the caller's stack) rather than kept, which would cost every request
// an allocation.
func (w *guardedWriter) controller() *http.ResponseController {
	return http.NewResponseController(w.ResponseWriter)
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	w.since.Store(time.Now().UnixNano())
	defer w.since.Store(0)
	return w.ResponseWriter.Write(p)
}

func (w *guardedWriter) Flush() { _ = w.FlushError() }

// FlushError flushes and reports a failed (or cut) write, so that
// http.ResponseController.Flush — and through it the stream — sees it.
func (w *guardedWriter) FlushError() error {
	w.since.Store(time.Now().UnixNano())
	defer w.since.Store(0)
	return w.controller().Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
