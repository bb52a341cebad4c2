package app

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

// health owns the server's readiness: SERVING while the server takes
// publishes and subscribes, NOT_SERVING once shutdown begins (for good)
// and while a durable store is unavailable or full (until it recovers). It
// answers gRPC health Check and Watch (on all three protocols) and the
// HTTP probes:
//
//   - /healthz (liveness): 200 while the process can answer at all.
//   - /readyz (readiness): 200 while ready; 503 while the store is
//     unavailable or full ("store unavailable: …", "store full: …") and
//     once draining ("draining").
//
// On drain every open Watch stream receives NOT_SERVING and then ends with
// an OK status, so a health watcher never holds shutdown for the grace
// period. A store outage only changes the status: Watch streams are told
// NOT_SERVING, then SERVING when the store is back.
type health struct {
	*grpchealth.StaticChecker
	draining atomic.Bool

	mu       sync.Mutex
	storeErr error // why the store takes no commit now; nil: it does (or there is none)
}

func newHealth() *health {
	return &health{StaticChecker: grpchealth.NewStaticChecker(ringcastv1connect.EventServiceName)}
}

// drain reports NOT_SERVING from now on, for the server ("") and for the
// event service; open Watch streams are told and then end.
func (h *health) drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.draining.Store(true)
	h.setStatus(grpchealth.StatusNotServing)
}

// setStatus sets the status of the server ("") and of the event service.
func (h *health) setStatus(st grpchealth.Status) {
	h.SetStatus("", st)
	h.SetStatus(ringcastv1connect.EventServiceName, st)
}

// setStore records whether the store takes commits (err nil) or not, and
// why; the status follows unless the server is draining. It reports
// whether readiness changed.
func (h *health) setStore(err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	changed := (err == nil) != (h.storeErr == nil)
	h.storeErr = err
	if !changed || h.draining.Load() {
		return changed
	}
	if err != nil {
		h.setStatus(grpchealth.StatusNotServing)
	} else {
		h.setStatus(grpchealth.StatusServing)
	}
	return true
}

// notReady is why the server is not ready ("" when it is): draining, or
// the store's condition.
func (h *health) notReady() string {
	if h.draining.Load() {
		return "draining"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.storeErr != nil {
		return h.storeErr.Error()
	}
	return ""
}

// Check answers like the static checker and, inside a Watch stream, notes
// that the stream is about to be sent NOT_SERVING (see watchEnd).
func (h *health) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	res, err := h.StaticChecker.Check(ctx, req)
	if end, ok := ctx.Value(watchEndKey{}).(*watchEnd); ok && err == nil {
		// The Watch sends a status only when it changed: a stream that
		// was already sent NOT_SERVING (a store outage) is sent nothing
		// now, so it ends at once; else it ends once this one is flushed.
		unchanged := end.last.Swap(int32(res.Status)+1) == int32(res.Status)+1
		if h.draining.Load() && res.Status != grpchealth.StatusServing {
			if unchanged {
				end.cancel()
			}
			end.told.Store(true)
		}
	}
	return res, err
}

// handle registers the gRPC health service (its Watch streams end once
// told NOT_SERVING), with opts (the per-client stream limit), and the two
// HTTP probes on mux. It returns the path of Watch, the one stream.
func (h *health) handle(mux *http.ServeMux, opts ...connect.HandlerOption) (watchPath string) {
	watchPath = "/" + grpchealth.HealthV1ServiceName + "/Watch"
	path, grpcHandler := grpchealth.NewHandler(h, opts...)
	mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != watchPath {
			grpcHandler.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		end := &watchEnd{cancel: cancel}
		grpcHandler.ServeHTTP(&watchWriter{ResponseWriter: w, end: end}, r.WithContext(context.WithValue(ctx, watchEndKey{}, end)))
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if why := h.notReady(); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(why + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return watchPath
}

// watchEndKey is the request-context key of a Watch stream's watchEnd. It
// must stay a context value: grpchealth's handler calls Check with the
// stream's context and nothing else, and connect-go gives a handler (here,
// grpchealth's) no other way to reach a value of the HTTP layer's.
type watchEndKey struct{}

// watchEnd ends one Watch stream once NOT_SERVING has been written to it.
// The health handler checks the status and then sends it, and every Send
// flushes: a flush after a Check that returned NOT_SERVING carries that
// message, so the stream's context is cancelled right after it, and the
// handler returns (OK) instead of waiting for a change that never comes.
type watchEnd struct {
	told   atomic.Bool
	last   atomic.Int32 // the status last sent on the stream, plus 1 (0: none yet)
	cancel context.CancelFunc
}

type watchWriter struct {
	http.ResponseWriter
	end *watchEnd
}

func (w *watchWriter) Flush() { _ = w.FlushError() }

func (w *watchWriter) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if w.end.told.Load() {
		w.end.cancel()
	}
	return err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *watchWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
