package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/edge"
	"github.com/ringcast/ringcast/server/internal/edge/retry"
	"github.com/ringcast/ringcast/server/internal/face/sse"
)

// While a server starts (it opens its store and reads it: New), Run
// already listens on its address and answers there from a starting
// handler, so that a liveness probe never kills a process that is reading
// a large store:
//
//   - /healthz 200 (alive);
//   - /readyz 503 "starting: reading the store";
//   - gRPC health NOT_SERVING (Check; Watch is told NOT_SERVING and stays
//     open until the hand-over);
//   - every EventService RPC, on every protocol, unavailable with
//     Retry-After; GET /events a 200 stream that ends at once with a
//     retry hint (EventSource gives up for good on any other status);
//     everything else 503.
//
// Once the server is built, the listener is handed over without being
// closed: connections already open to the starting handler are shut down
// (HTTP/2 with GOAWAY) and their clients reconnect to the server.

// startingRetryAfter is the Retry-After of a refusal while starting.
const startingRetryAfter = time.Second

// errStarting is the refusal of every call while the server starts.
var errStarting = errors.New("starting: the server is reading its store; retry shortly")

// startingHandler is the handler served until the server is built.
func startingHandler(cfg Config) http.Handler {
	mux := http.NewServeMux()
	checker := grpchealth.NewStaticChecker(ringcastv1connect.EventServiceName)
	checker.SetStatus("", grpchealth.StatusNotServing)
	checker.SetStatus(ringcastv1connect.EventServiceName, grpchealth.StatusNotServing)
	mux.Handle(grpchealth.NewHandler(checker))
	mux.Handle(ringcastv1connect.NewEventServiceHandler(ringcastv1connect.UnimplementedEventServiceHandler{},
		connect.WithInterceptors(refuseStarting{})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	// GET /events: a stream that ends at once with a retry hint, which
	// EventSource follows; it gives up for good on a 503.
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", retry.RetryAfterValue(startingRetryAfter))
		sse.RetryLater(w, r, errStarting.Error())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Retry-After", retry.RetryAfterValue(startingRetryAfter))
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(errStarting.Error() + "\n"))
	})
	// The main edge's Host check and CORS, so that the starting server
	// answers whom the server will.
	return edge.Handler(mux, edge.Options{
		ReadTimeout:  cfg.Edge.ReadTimeout,
		CheckHost:    hostCheckApplies(cfg),
		AllowedHosts: cfg.AllowedHosts,
		CORSOrigins:  cfg.CORSOrigins,
		Log:          cfg.Logger,
	})
}

// refuseStarting answers every EventService call unavailable, with
// Retry-After.
type refuseStarting struct{}

func (refuseStarting) refusal() error {
	ce := connect.NewError(connect.CodeUnavailable, errStarting)
	ce.Meta().Set("Retry-After", retry.RetryAfterValue(startingRetryAfter))
	return ce
}

func (r refuseStarting) WrapUnary(connect.UnaryFunc) connect.UnaryFunc {
	return func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) { return nil, r.refusal() }
}

func (refuseStarting) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (r refuseStarting) WrapStreamingHandler(connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(context.Context, connect.StreamingHandlerConn) error { return r.refusal() }
}

// handoff shares one listener between the starting handler's server and
// the server's: one goroutine accepts, and each connection goes to
// whichever view is current. The starting view ends (its Accept fails)
// without closing the listener.
type handoff struct {
	ln    net.Listener
	conns chan net.Conn
	errc  chan error // the listener's failure, once
	once  sync.Once
}

func newHandoff(ln net.Listener) *handoff {
	h := &handoff{ln: ln, conns: make(chan net.Conn), errc: make(chan error, 1)}
	go h.pump()
	return h
}

func (h *handoff) pump() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			h.errc <- err
			return
		}
		h.conns <- c
	}
}

// view is a net.Listener on the shared one until stop closes (nil: until
// Close).
func (h *handoff) view(stop <-chan struct{}) *handoffView {
	return &handoffView{h: h, stop: stop, closed: make(chan struct{})}
}

type handoffView struct {
	h      *handoff
	stop   <-chan struct{}
	closed chan struct{}
	once   sync.Once
}

// errHandedOver ends the starting server's Serve.
var errHandedOver = errors.New("listener handed over")

func (v *handoffView) Accept() (net.Conn, error) {
	select {
	case c := <-v.h.conns:
		return c, nil
	case err := <-v.h.errc:
		v.h.errc <- err
		return nil, err
	case <-v.stop:
		return nil, errHandedOver
	case <-v.closed:
		return nil, net.ErrClosed
	}
}

// Close closes the view; the final view (stop nil) closes the listener.
func (v *handoffView) Close() error {
	v.once.Do(func() { close(v.closed) })
	if v.stop == nil {
		return v.h.ln.Close()
	}
	return nil
}

func (v *handoffView) Addr() net.Addr { return v.h.ln.Addr() }

// serveStarting serves the starting handler on ln until the returned stop
// is called; stop returns once every connection it had is closed (after a
// grace of a few seconds for requests under way) and gives the listener
// to serve on next.
func serveStarting(cfg Config, ln net.Listener) (stop func() net.Listener) {
	h := newHandoff(ln)
	stopCh := make(chan struct{})
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           startingHandler(cfg),
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cfg.Edge.IdleTimeout,
	}
	var sln net.Listener = h.view(stopCh)
	if cfg.TLSCert != "" {
		if cert, err := loadCert(cfg); err == nil {
			protocols.SetHTTP2(true)
			srv.TLSConfig = cert
			sln = tlsListener(sln, cert)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(sln)
	}()
	return func() net.Listener {
		close(stopCh)
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close() // a health Watch: its client watches again
		}
		return h.view(nil)
	}
}
