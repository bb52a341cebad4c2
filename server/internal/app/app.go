// Package app assembles a ringcast server: the hub, the Connect handler
// (Connect, gRPC, gRPC-Web), gRPC health and reflection, the SSE face,
// metrics, the console and the demo feed, on one port over HTTP/1.1 and h2c
// (or TLS). server/cmd/ringcast only parses flags and calls Run.
package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge"
	"github.com/ringcast/ringcast/server/internal/edge/access"
	"github.com/ringcast/ringcast/server/internal/edge/limit"
	"github.com/ringcast/ringcast/server/internal/face/rpc"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/face/stream"
	"github.com/ringcast/ringcast/server/internal/ops/buildinfo"
	"github.com/ringcast/ringcast/server/internal/ops/console"
	"github.com/ringcast/ringcast/server/internal/ops/demo"
	"github.com/ringcast/ringcast/server/internal/ops/metrics"
	"github.com/ringcast/ringcast/server/internal/settings"
	"go.opentelemetry.io/otel/trace"
)

// Config is the server's whole configuration: the hub's (embedded; its
// fields document their defaults) and the server's own. Zero fields take
// their defaults, applied once, when New builds the server; Defaults returns
// them for flags to start from. A numeric field's default is its row of
// package settings, the one table of the server's defaults and bounds.
// Coalesce is the one field whose zero value (no coalescing) is not its
// flag's default.
type Config struct {
	hub.Config // ring, stream timings, tables, MaxRequestBytes, Version, Logger; Observer is the server's metrics

	// Addr is the listen address. Default 127.0.0.1:8080.
	Addr string
	// WriteTimeout cuts a stream whose write is blocked this long.
	// Default: settings.WriteTimeout.
	WriteTimeout time.Duration
	// Demo publishes the embedded demo feed every DemoInterval (default
	// settings.DemoInterval). Off by default (serve --demo turns it on).
	Demo         bool
	DemoInterval time.Duration
	// TLSCert and TLSKey (PEM files) serve HTTPS with HTTP/2; empty: plaintext.
	TLSCert string
	TLSKey  string
	// ShutdownDelay is how long the server, once told to stop, goes on
	// serving everything (the listener open, new connections and streams
	// accepted, /healthz 200) while it reports not ready (/readyz 503,
	// gRPC health NOT_SERVING), before it drains: time for load balancers
	// to see it leave and send new clients elsewhere. 0: drain at once
	// (settings.ShutdownDelay's default).
	ShutdownDelay time.Duration
	// EndDelay, when it closes or receives, ends the shutdown delay at
	// once (serve: a second SIGTERM or interrupt). Nil: the delay runs
	// its course.
	EndDelay <-chan struct{}
	// ShutdownGrace is how long shutdown waits for streams after DRAINING.
	// Default: settings.ShutdownGrace.
	ShutdownGrace time.Duration
	// ParkSSE lets idle SSE streams over HTTP/1.x wait without a goroutine
	// (docs/sse.md, "Parked streams"). Default off.
	ParkSSE bool
	// PprofAddr, when set, serves net/http/pprof on a listener of its own
	// (a bare port or ":port" binds loopback; see pprof.go). Default: off.
	PprofAddr string
	// PprofAllowRemote lets PprofAddr be a non-loopback address; without
	// it such an address is refused.
	PprofAllowRemote bool

	// Auth is "none" (the default) or "jwt" (docs/security.md). With
	// "none" the server refuses a non-loopback Addr unless
	// AllowUnauthenticated.
	Auth                 string
	JWTKeyFile           string
	JWTIssuer            string
	JWTAudience          string
	AllowUnauthenticated bool
	// Store is where commits live: memory (default), embedded or jetstream.
	Store Store
	// Edge bounds clients at the edge: per-client streams and publish
	// rate, connections, idle and read timeouts (package edge).
	Edge edge.Config
	// AllowedHosts are Host names an open loopback server answers to
	// besides loopback names and addresses (DNS-rebinding defence).
	AllowedHosts []string
	// CORSOrigins are the origins allowed cross-origin ("*": all, never
	// with credentials). None by default.
	CORSOrigins []string
	// DisableReflection, DisableConsole and DisableMetrics switch those
	// endpoints off. MetricsAddr, when set, serves /metrics on its own
	// listener there instead of on Addr.
	DisableReflection bool
	DisableConsole    bool
	DisableMetrics    bool
	MetricsAddr       string
	// AccessLog logs one line per request on Addr, at Info on Logger,
	// when its response ends (package edge, withAccessLog). Default off.
	AccessLog bool
	// TracerProvider, when set, traces every RPC (otelconnect; W3C trace
	// context). Default nil: no tracing (see TracerProviderFromEnv). A
	// publish's traceparent is kept on its commit either way.
	TracerProvider trace.TracerProvider
}

// Defaults returns the documented defaults: those of a zero Config (the
// demo feed off), with live wake-ups coalesced (settings.Coalesce).
func Defaults() Config {
	return Config{Config: hub.Config{Coalesce: settings.Coalesce.Default}}.withDefaults()
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Version == "" {
		c.Version = buildinfo.Read().String() // module version and VCS revision
	}
	c.Config = c.Config.WithDefaults()
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	c.WriteTimeout = settings.WriteTimeout.Or(c.WriteTimeout)
	c.DemoInterval = settings.DemoInterval.Or(c.DemoInterval)
	c.ShutdownGrace = settings.ShutdownGrace.Or(c.ShutdownGrace)
	if c.Auth == "" {
		c.Auth = AuthNone
	}
	c.Edge = c.Edge.WithDefaults()
	return c
}

// Validate reports configuration errors before anything starts. Zero fields
// are valid: they take their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	errs := []error{c.Config.Validate(),
		settings.WriteTimeout.Check(c.WriteTimeout),
		settings.DemoInterval.Check(c.DemoInterval),
		settings.ShutdownDelay.Check(c.ShutdownDelay),
		settings.ShutdownGrace.Check(c.ShutdownGrace),
	}
	if c.PprofAddr != "" {
		if addr, err := pprofAddr(c.PprofAddr); err != nil {
			errs = append(errs, err)
		} else if !edge.IsLoopbackAddr(addr) && !c.PprofAllowRemote {
			errs = append(errs, fmt.Errorf("--pprof-addr %s is not a loopback address: pprof shows anyone who reaches it the command line (credentials given in flags included) and the heap; bind 127.0.0.1, or pass --pprof-allow-remote to serve it there anyway", addr))
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key go together"))
	}
	errs = append(errs, c.validateSecurity())
	errs = append(errs, c.Store.validate()...)
	errs = append(errs, c.Edge.Validate()...)
	return errors.Join(errs...)
}

// plausibleRate is the publish rate, in commits per second, the window is
// checked against when --publish-rate is unbounded.
const plausibleRate = 10000

// warnWindow logs, at Warn, a ring window so small that a plausible
// publish rate (one client at --publish-rate, else plausibleRate) turns it
// over within the longest a live wake-up may be held (hub.MaxHold):
// subscribers a wake-up behind would find their cursors gone at once and
// resync (docs/limits.md). Such a window is allowed, never an error.
func warnWindow(cfg Config) {
	rate := cfg.Edge.PublishRate
	if rate <= 0 {
		rate = plausibleRate
	}
	held := hub.MaxHold(cfg.Coalesce)
	if need := rate * held.Seconds(); float64(cfg.Window) < need {
		cfg.Logger.Warn("the ring window turns over within a few coalesce intervals at a plausible publish rate: subscribers a wake-up behind will find their cursors too old and resync; raise --window or lower --coalesce",
			"window", cfg.Window, "coalesce", cfg.Coalesce, "rate_per_s", rate,
			"turnover", time.Duration(float64(cfg.Window)/rate*float64(time.Second)), "window_wanted", int(math.Ceil(need)))
	}
}

// Server is an assembled ringcast server, not yet serving.
type Server struct {
	Hub     *hub.Hub
	Handler http.Handler
	cfg     Config
	guard   *edge.WriteGuard
	events  *sse.Handler // Close cuts its parked streams, which outlive the HTTP server's Shutdown
	health  *health
	tls     *tls.Config // nil: plaintext HTTP/1.1 and h2c
	// closeStore closes a durable store's connection (and embedded
	// server) once the hub is closed.
	closeStore func()
	// storeCheck reports why a durable store takes no commits now (nil:
	// it does); nil for the memory store. Readiness follows it.
	storeCheck func(context.Context) error
	limiter    *limit.Limiter
	metrics    http.Handler // served on metricsLn (Config.MetricsAddr); nil: none
	// metricsLn is the /metrics listener, bound by New so a bad address
	// fails before anything serves.
	metricsLn net.Listener
}

// MetricsAddr is the address of the separate /metrics listener
// (Config.MetricsAddr), or "" when there is none.
func (s *Server) MetricsAddr() string {
	if s.metricsLn == nil {
		return ""
	}
	return s.metricsLn.Addr().String()
}

// New builds the hub (minting the epoch and publishing ServerStatus at seq
// 1) and the handler.
func New(cfg Config) (*Server, error) { return NewContext(context.Background(), cfg) }

// NewContext is New that gives up opening the store and rebuilding from it
// when ctx ends (the process is told to stop while it starts).
func NewContext(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tracing, err := tracingOption(cfg.TracerProvider)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	cfg = cfg.withDefaults()
	warnWindow(cfg)
	tlsConfig, err := loadCert(cfg)
	if err != nil {
		return nil, err
	}
	m := metrics.New(rpc.Face, sse.Face) // one registry per server: nothing is registered globally
	mw, err := authMiddleware(cfg, m)
	if err != nil {
		return nil, err
	}
	hubCfg := cfg.Config
	hubCfg.Observer = m
	hubCfg.Admit = edge.Admitter{} // every face's requests, admitted by the edge
	log, closeStore, err := openStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", cfg.Store.Kind, err)
	}
	hubCfg.Log = log
	if storeOpened != nil {
		storeOpened()
	}
	var storeCheck func(context.Context) error
	if a, ok := log.(hub.AvailabilityLog); ok {
		storeCheck = a.Available
	}
	h, err := hub.NewContext(ctx, hubCfg)
	if err != nil {
		closeStore()
		return nil, fmt.Errorf("start hub: %w", cfg.Store.nameFiles(err))
	}
	mux := http.NewServeMux()
	limiter := cfg.Edge.Limiter(m.LimitRejected, cfg.Logger)
	// The access log's interceptor, outermost, records each RPC's code;
	// the refusals the handler decides are logged inside the limits',
	// which log their own.
	var accessRPC []connect.Interceptor
	var accessLog *slog.Logger
	if cfg.AccessLog {
		accessRPC, accessLog = []connect.Interceptor{access.Interceptor()}, cfg.Logger
	}
	rpcPath, rpcHandler := rpc.NewHandler(h, cfg.MaxRequestBytes,
		append(tracing, connect.WithInterceptors(append(accessRPC, m.Interceptor(), limiter.Interceptor(), edge.LogRefusals(cfg.Logger), edge.StreamDeadline(), edge.OneRequestMessage())...))...)
	// Every stream's path: its read deadline is cleared once its request
	// is read (edge.Handler).
	streams := stream.Paths(ringcastv1.File_ringcast_v1_ringcast_proto.Services().ByName("EventService"))
	mux.Handle(rpcPath, guardRPC(mw, rpcHandler))
	// gRPC health and reflection streams take their client's stream slots
	// too, and clear their read deadlines once their requests are read.
	// (Their handlers are built from service names, not descriptors: each
	// adds its stream's path.)
	sideRPC := connect.WithInterceptors(append(accessRPC, limiter.Interceptor(), edge.StreamDeadline())...)
	health := newHealth()
	streams[health.handle(mux, sideRPC)] = true
	if !cfg.DisableReflection {
		reflector := grpcreflect.NewStaticReflector(ringcastv1connect.EventServiceName, grpchealth.HealthV1ServiceName)
		for _, handle := range []func(*grpcreflect.Reflector, ...connect.HandlerOption) (string, http.Handler){grpcreflect.NewHandlerV1, grpcreflect.NewHandlerV1Alpha} {
			path, h := handle(reflector, sideRPC)
			mux.Handle(path, h)
			streams[path+"ServerReflectionInfo"] = true
		}
	}
	m.Watch(h)
	var metricsHandler http.Handler
	switch {
	case cfg.DisableMetrics:
	case cfg.MetricsAddr != "":
		metricsHandler = m.Handler()
	default:
		mux.Handle("/metrics", m.Handler())
	}
	guard := edge.NewWriteGuard(cfg.WriteTimeout, cfg.Logger)
	m.WatchWriteCuts(guard.Cuts)
	sseOpts := []sse.Option{sse.WithLogger(cfg.Logger), sse.WithStreamSlots(limiter.OpenSSE)}
	if cfg.ParkSSE {
		sseOpts = append(sseOpts, sse.WithParking())
	}
	events := sse.New(h, sseOpts...)
	mux.Handle("/events", guardSSE(mw, events))
	if !cfg.DisableConsole {
		mux.Handle("/", console.Handler())
	}
	handler := edge.Handler(mux, edge.Options{
		ReadTimeout:  cfg.Edge.ReadTimeout,
		Streams:      streams,
		CheckHost:    hostCheckApplies(cfg),
		AllowedHosts: cfg.AllowedHosts,
		CORSOrigins:  cfg.CORSOrigins,
		Writes:       guard,
		AccessLog:    accessLog,
		Log:          cfg.Logger,
	})
	srv := &Server{Hub: h, Handler: handler, cfg: cfg, guard: guard, events: events, health: health, tls: tlsConfig, metrics: metricsHandler, closeStore: closeStore, storeCheck: storeCheck, limiter: limiter}
	if metricsHandler != nil {
		if srv.metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			h.Close()
			closeStore()
			return nil, fmt.Errorf("metrics-addr: %w", err)
		}
	}
	return srv, nil
}

// Serve serves on ln until ctx is cancelled, then shuts down gracefully:
// gRPC health and /readyz report NOT_SERVING (open health Watch streams
// are told and end); for Config.ShutdownDelay everything else goes on as
// before (the listener stays open, /healthz answers 200); then the demo
// feed stops, the hub publishes ServerStatus(DRAINING), the listener
// closes along with connections that have not sent a request, and streams
// end with OK status. It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           s.Handler,
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       s.cfg.Edge.IdleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: s.cfg.Edge.MaxConcurrentStreams},
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	ln = s.limiter.Listener(ln, s.cfg.Edge.MaxConns, s.cfg.Edge.MaxConnsPerClient)
	guard := s.limiter.ResetGuard(float64(s.cfg.Edge.MaxH2Resets), s.cfg.Edge.H2ResetPenalty)
	ln = guard.Listener(ln, s.tls == nil)
	fresh := newFreshConns()
	srv.ConnState = fresh.track
	if s.tls != nil {
		protocols.SetHTTP2(true)
		srv.TLSConfig = s.tls
	}
	if err := edge.ServeHTTP2(srv, guard); err != nil {
		return err
	}
	if s.tls != nil {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { s.guard.Run(stop) })
	// The demo feed runs until the drain, through the shutdown delay.
	demoCtx, stopDemo := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDemo()
	if s.storeCheck != nil {
		wg.Go(func() { s.watchStore(stop) })
	}
	if s.cfg.Demo {
		feed := demo.New(s.cfg.DemoInterval)
		wg.Go(func() { feed.Run(demoCtx, s.Hub) })
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	var msrv *http.Server // the separate /metrics listener's
	if s.metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", s.metrics)
		var mln net.Listener
		mln, msrv = sideEdge(s.cfg, s.limiter, s.metricsLn, mux, s.cfg.WriteTimeout)
		wg.Go(func() { _ = msrv.Serve(mln) })
	}

	var err error
	served := false // Serve returned: its listener is closed already
	select {
	case err = <-serveErr:
		served = true
	case err = <-s.Hub.Failed(): // the log was replaced: drain, then exit with it
	case <-ctx.Done():
	}
	s.health.drain()
	if ctx.Err() != nil && !served && s.cfg.ShutdownDelay > 0 {
		// Not ready, yet serving everything: load balancers see /readyz
		// fail and stop sending new clients before the listener closes.
		s.cfg.Logger.Info("shutting down: not ready; serving on for the shutdown delay, then draining", "shutdown_delay", s.cfg.ShutdownDelay)
		delay := time.NewTimer(s.cfg.ShutdownDelay)
		select {
		case <-delay.C:
		case <-s.cfg.EndDelay:
		case err = <-serveErr:
			served = true
		case err = <-s.Hub.Failed():
		}
		delay.Stop()
	}
	stopDemo()
	s.Hub.Drain()
	if !served {
		// Stop accepting and wait for Serve to return: every connection
		// it accepted has then been reported as StateNew. Its error now
		// only reports the listener we closed.
		_ = ln.Close()
		<-serveErr
	}
	// Connections that have not sent a request are closed now, like idle
	// ones, rather than counted as busy: Shutdown would wait up to 5 s
	// for their first request. Node's fetch leaves one open whenever it
	// aborts a streaming response over HTTP/1.1 (it destroys the stream's
	// socket and opens a new one), and browsers open speculative ones.
	// A request that was still arriving on one fares as it would have in
	// the closed listener's backlog: the client sees the connection close
	// and retries elsewhere.
	fresh.closeAll()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	serr := srv.Shutdown(shutdownCtx)
	if serr == nil {
		// Every stream, on every face: also those whose sink took its
		// connection over from the HTTP server (parked SSE streams), which
		// Shutdown does not see.
		serr = s.Hub.WaitStreams(shutdownCtx)
	}
	if serr != nil {
		s.cfg.Logger.Warn("streams still open after the shutdown grace period; closing them", "grace", s.cfg.ShutdownGrace)
		s.Hub.Close()
		_ = srv.Close()
		s.events.Close()
		// Their writes now fail at once: they end promptly. Serve returns
		// once every stream has ended — a parked one after its End, one on
		// a handler's goroutine (which srv.Close does not wait for) once
		// counted out — or after a second grace period.
		waitCtx, cancelWait := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
		defer cancelWait()
		if s.Hub.WaitStreams(waitCtx) != nil {
			s.cfg.Logger.Warn("streams still open after a second grace period", "streams", s.Hub.Subscribers())
		}
	}
	s.Hub.Close()
	if msrv != nil {
		_ = msrv.Close()
	}
	close(stop)
	wg.Wait()
	s.closeStore()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// storeCheckInterval is how often readiness asks a durable store whether
// it takes commits.
const storeCheckInterval = time.Second

// watchStore asks the store whether it takes commits, every
// storeCheckInterval until stop closes, and makes readiness follow: not
// ready while the store is unavailable or full, ready again once it
// recovers. Changes are logged.
func (s *Server) watchStore(stop <-chan struct{}) {
	t := time.NewTicker(storeCheckInterval)
	defer t.Stop()
	// stop ends a check under way too: shutdown never waits on a store
	// that does not answer.
	stopped, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	go func() {
		select {
		case <-stop:
			cancelAll()
		case <-stopped.Done():
		}
	}()
	for {
		ctx, cancel := context.WithTimeout(stopped, 5*time.Second)
		err := s.storeCheck(ctx)
		cancel()
		if s.health.setStore(err) {
			if err != nil {
				s.cfg.Logger.Warn("not ready: the store takes no commits", "err", err)
			} else {
				s.cfg.Logger.Info("ready: the store takes commits again")
			}
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// freshConns tracks the connections that have not yet delivered a request
// (http.StateNew).
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newFreshConns() *freshConns {
	return &freshConns{conns: make(map[net.Conn]struct{})}
}

// track is the server's ConnState hook.
func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == http.StateNew {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
}

// closeAll closes every connection still waiting for its first request.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}

// loadCert is the TLS configuration of cfg's certificate; nil for
// plaintext.
func loadCert(cfg Config) (*tls.Config, error) {
	if cfg.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

func tlsListener(ln net.Listener, c *tls.Config) net.Listener { return tls.NewListener(ln, c) }

// storeOpened, when set (tests), is called by New once the store is open
// and before the hub reads it: a test holds the read there.
var storeOpened func()

// Run listens on cfg.Addr, logs it, and answers there at once as a server
// that is starting (starting.go: alive, not ready) while it builds the
// server (opening and reading the store); then it logs one line with the
// address and the epoch, and serves until ctx is cancelled.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if _, err := loadCert(cfg); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	dcfg := cfg.withDefaults()
	dcfg.Logger.Info("ringcast listening: starting (alive, not ready until the store is read)", "addr", ln.Addr().String(),
		"store", cmp.Or(cfg.Store.Kind, StoreMemory))
	handOver := serveStarting(dcfg, ln)
	s, err := NewContext(ctx, cfg)
	ln = handOver()
	if err != nil {
		_ = ln.Close()
		return err
	}
	cfg = s.cfg
	// abort undoes New when Run fails before serving.
	abort := func() {
		if s.metricsLn != nil {
			_ = s.metricsLn.Close()
		}
		s.Hub.Close()
		s.closeStore()
	}
	scheme := "http"
	if cfg.TLSCert != "" {
		scheme = "https"
	}
	cfg.Logger.Info("ringcast serving",
		"addr", ln.Addr().String(),
		"url", scheme+"://"+ln.Addr().String(),
		"epoch", epoch.Format(s.Hub.Epoch()),
		"window", cfg.Window,
		"store", cmp.Or(cfg.Store.Kind, StoreMemory),
		"demo", cfg.Demo,
		"auth", cfg.Auth)
	logSecurity(cfg, cfg.Logger)
	if cfg.PprofAddr != "" {
		stop, err := servePprof(ctx, cfg, s.limiter)
		if err != nil {
			_ = ln.Close()
			abort()
			return err
		}
		defer stop()
	}
	return s.Serve(ctx, ln)
}
