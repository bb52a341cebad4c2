package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/settings"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

const serveSynopsis = `serve [flags]

Runs the server: Connect, gRPC and gRPC-Web, SSE at /events, health, metrics
and the web console, on one port. For example:
  ringcast serve                                    loopback, port 8080, memory store
  RINGCAST_ADDR=127.0.0.1:9090 ringcast serve       a flag from the environment
  ringcast serve --addr 0.0.0.0:8080 --auth jwt --jwt-key-file ringcast.key
A non-loopback --addr needs --auth jwt (or --allow-unauthenticated, to serve
it open on purpose).`

// serveOpts are serve's flags that are not fields of app.Config.
type serveOpts struct {
	allowedHosts, corsOrigins    stringList
	reflection, console, metrics *bool
	logLevel, logFormat          *string
}

// newServeFlags defines serve's flags on cfg (its values the defaults, read
// from package settings by app.Defaults), with the bounds of each numeric
// one in its help (serveBounds).
func newServeFlags(cfg *app.Config, stderr io.Writer) (*flag.FlagSet, *serveOpts) {
	fs := newFlagSet("serve", serveSynopsis, stderr)
	o := &serveOpts{}
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "address to listen on (HTTP/1.1 and h2c, or TLS with --tls-cert)")
	fs.IntVar(&cfg.Window, "window", cfg.Window, "events retained in the ring (W): how far back a cursor can resume")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", cfg.Heartbeat, "heartbeat (or pending Progress) interval on idle streams")
	fs.DurationVar(&cfg.Coalesce, "coalesce", cfg.Coalesce, "while writes back up, hold live wake-ups up to this long after the previous one (up to 16x under sustained overload, when streams are still writing or the CPUs are saturated) so commits published meanwhile reach each subscriber in one write; a commit finding the streams idle wakes them at once (0: never hold)")
	fs.DurationVar(&cfg.Lease, "lease", cfg.Lease, "longest life of a stream (±10% jitter); clients resume with their cursor; 0 keeps the default, negative disables")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", cfg.WriteTimeout, "cut a stream whose write is blocked this long (a subscriber that stopped reading)")
	fs.IntVar(&cfg.StateKeys, "state-keys", cfg.StateKeys, "keys kept for LATEST_PER_KEY snapshots; past it the least recently updated key is dropped")
	fs.DurationVar(&cfg.DedupeWindow, "dedupe-window", cfg.DedupeWindow, "how long a publish idempotency key is remembered")
	fs.IntVar(&cfg.DedupeKeys, "dedupe-keys", cfg.DedupeKeys, "most idempotency keys remembered; a new key past it is refused (resource_exhausted, Retry-After) until the oldest expire, none is forgotten early (memory store only: a durable store's duplicate window has no key bound)")
	fs.IntVar(&cfg.DedupeKeysPerClient, "dedupe-keys-per-client", cfg.DedupeKeysPerClient, "most idempotency keys remembered for one client (token sub, else remote IP); past it its new keys get resource_exhausted until its oldest expire, and a batch of more new keys than it invalid_argument (memory store only; 0: half of --dedupe-keys; negative: no per-client share)")
	fs.IntVar(&cfg.MaxRequestBytes, "max-request-bytes", cfg.MaxRequestBytes, "largest request message accepted, in bytes")
	fs.IntVar(&cfg.MaxFactBytes, "max-fact-bytes", cfg.MaxFactBytes, "largest fact accepted (its protobuf encoding), in bytes; larger ones are refused with invalid_argument")
	fs.IntVar(&cfg.MaxDataDepth, "max-data-depth", cfg.MaxDataDepth, "deepest nesting of objects and arrays accepted in a fact's data (the data object is level 1)")
	fs.Int64Var(&cfg.MaxRingBytes, "max-ring-bytes", cfg.MaxRingBytes, "bytes the ring may hold (events and their cached encodings); past it the oldest events are dropped, even below --window")
	fs.Int64Var(&cfg.MaxStateBytes, "max-state-bytes", cfg.MaxStateBytes, "bytes of facts kept for LATEST_PER_KEY snapshots; past it the least recently updated keys are dropped")
	fs.IntVar(&cfg.Edge.MaxStreamsPerClient, "max-streams-per-client", cfg.Edge.MaxStreamsPerClient, "streams one client (token sub, else remote IP) may hold open; more: resource_exhausted (negative: no bound)")
	fs.Float64Var(&cfg.Edge.PublishRate, "publish-rate", cfg.Edge.PublishRate, "commits per second one client may publish on average (token bucket; negative: no bound)")
	fs.IntVar(&cfg.Edge.PublishBurst, "publish-burst", cfg.Edge.PublishBurst, "commits one client may publish at once (the bucket's size)")
	fs.Int64Var(&cfg.Edge.PublishByteRate, "publish-byte-rate", cfg.Edge.PublishByteRate, "bytes per second one client may publish on average (its Publish and PublishBatch requests' protobuf size; token bucket; negative: no bound)")
	fs.Int64Var(&cfg.Edge.PublishByteBurst, "publish-byte-burst", cfg.Edge.PublishByteBurst, "bytes one client may publish at once (the byte bucket's size)")
	fs.IntVar(&cfg.Edge.MaxConns, "max-conns", cfg.Edge.MaxConns, "connections held at once; more are turned away on accept with a 429 saying why (default: 80% of the open-file limit; negative: no bound)")
	fs.IntVar(&cfg.Edge.MaxConnsPerClient, "max-conns-per-client", settings.MaxConnsPerClient.Default, "connections one client (remote IP; IPv6: its /64) may hold at once; more are turned away on accept with a 429 saying why (default: a quarter of --max-conns; negative: no bound; a load generator on one address needs it raised)")
	fs.DurationVar(&cfg.Edge.IdleTimeout, "idle-timeout", cfg.Edge.IdleTimeout, "close a connection with no request in flight (HTTP/1.1 keep-alive, HTTP/2 with no stream) after this long")
	fs.DurationVar(&cfg.Edge.ReadTimeout, "read-timeout", cfg.Edge.ReadTimeout, "longest time to read a request body, on every path (a unary call's message, a stream's request); a response begun before the body was read closes its HTTP/1.1 connection")
	fs.IntVar(&cfg.Edge.MaxConcurrentStreams, "max-h2-streams", cfg.Edge.MaxConcurrentStreams, "streams one HTTP/2 connection may have open at once")
	fs.IntVar(&cfg.Edge.MaxH2Resets, "max-h2-resets", cfg.Edge.MaxH2Resets, "stream resets per second on one HTTP/2 connection, the client's RST_STREAM frames and those the server sends in answer to its frames (a bucket of as many); past it GOAWAY ENHANCE_YOUR_CALM, and a client cut twice within a minute is refused for --h2-reset-penalty (negative: no bound)")
	fs.DurationVar(&cfg.Edge.H2ResetPenalty, "h2-reset-penalty", cfg.Edge.H2ResetPenalty, "how long a client cut for HTTP/2 rapid reset twice within a minute is refused new connections, everyone behind its IP (IPv6: /64) included; a first cut costs only the connection (negative: none)")
	fs.BoolVar(&cfg.Demo, "demo", cfg.Demo, "publish the embedded river-gauge demo feed into the ring (off by default: an empty ring; go tool task run turns it on)")
	fs.DurationVar(&cfg.DemoInterval, "demo-interval", cfg.DemoInterval, "time between demo rounds (one commit each)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "TLS certificate file (PEM); serve HTTPS with HTTP/2")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "TLS private key file (PEM)")
	fs.DurationVar(&cfg.ShutdownDelay, "shutdown-delay", cfg.ShutdownDelay, "on SIGTERM or interrupt, how long to go on serving everything (the listener open, /healthz 200) while /readyz answers 503 and gRPC health NOT_SERVING, before draining: time for load balancers to send new clients elsewhere; a second signal drains at once (0: drain at once, the listener closes with the signal)")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", cfg.ShutdownGrace, "how long shutdown waits for streams to end after DRAINING")
	fs.StringVar(&cfg.Auth, "auth", cfg.Auth, "who may publish and subscribe: none, or jwt (a bearer token verified with --jwt-key-file; docs/security.md)")
	fs.StringVar(&cfg.JWTKeyFile, "jwt-key-file", "", "key that verifies tokens, read by its content: a JWKS, a PEM public key or certificate, DER (bare or base64) of one, an OpenSSH public key line, or an HMAC secret written as \"hmac:<secret>\" (docs/security.md)")
	fs.StringVar(&cfg.JWTIssuer, "jwt-issuer", "", "required token issuer (iss), when set")
	fs.StringVar(&cfg.JWTAudience, "jwt-audience", "", "required token audience (aud), when set")
	fs.BoolVar(&cfg.AllowUnauthenticated, "allow-unauthenticated", false, "serve a non-loopback --addr with --auth none (logs a warning at start)")
	fs.BoolVar(&cfg.ParkSSE, "sse-park", cfg.ParkSSE, "let idle SSE streams over HTTP/1.1 wait without a goroutine: less memory per stream; a client that closed its connection is noticed by the stream's writes, within two heartbeats (docs/sse.md)")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", "", "serve net/http/pprof on this address, on a listener of its own (off when empty; a bare port or :port binds 127.0.0.1)")
	fs.BoolVar(&cfg.PprofAllowRemote, "pprof-allow-remote", false, "let --pprof-addr be a non-loopback address (refused otherwise): pprof shows anyone who reaches it the command line and the heap")
	fs.StringVar(&cfg.Store.Kind, "store", app.StoreMemory, "where commits live: memory (one process, new epoch per boot), embedded (in-process NATS JetStream in --data-dir) or jetstream (a NATS cluster at --nats-url)")
	fs.StringVar(&cfg.Store.DataDir, "data-dir", "", "directory of the embedded store's JetStream files (--store embedded)")
	fs.Var((*stringList)(&cfg.Store.NATSURLs), "nats-url", "NATS URL for --store jetstream (repeatable or a comma list; nats://user:pass@host:4222 for credentials in the URL)")
	fs.StringVar(&cfg.Store.NATSCreds, "nats-creds", "", "NATS credentials file (--store jetstream)")
	fs.StringVar(&cfg.Store.NATSStream, "nats-stream", natslog.DefaultStream, "JetStream stream name; created if absent with the limits below, used as is if present (its own limits apply, and ServerStatus reports them)")
	fs.IntVar(&cfg.Store.NATSReplicas, "nats-replicas", settings.NATSReplicas.Default, "replicas of a stream ringcast creates: 1 or 3")
	fs.Int64Var(&cfg.Store.NATSMaxBytes, "nats-max-bytes", settings.NATSMaxBytes.Default, "size limit of a stream ringcast creates, in bytes; the oldest commits go first (negative: none, the disk use unbounded, logged at WARN)")
	fs.DurationVar(&cfg.Store.NATSMaxAge, "nats-max-age", settings.NATSMaxAge.Default, "age limit of a stream ringcast creates: older commits are discarded (negative, e.g. -1s: none, logged at WARN)")
	fs.Int64Var(&cfg.Store.NATSMaxMsgs, "nats-max-msgs", settings.NATSMaxMsgs.Default, "commit count limit of a stream ringcast creates (0: none)")
	fs.BoolVar(&cfg.Store.Recover, "store-recover", false, "serve the stream under a NEW epoch, every consumer resyncing: after restoring a backup (a JetStream snapshot or a copy of --data-dir), or to serve a damaged stream (acknowledged commits lost, holes, oldest commits gone without its limits discarding them, commits whose bytes changed) instead of refusing to start; every start with it begins another epoch, so pass it for one start only (--store embedded or jetstream)")
	fs.IntVar(&cfg.Rebuild, "state-rebuild", cfg.Rebuild, "with a durable store, the newest commits read at start to rebuild the ring and the LATEST_PER_KEY table")
	fs.Var(&o.allowedHosts, "allowed-host", "a Host name to answer besides loopback names (repeatable), on --addr with --auth none on loopback and always on --metrics-addr and --pprof-addr (which also answer to IP addresses); others get 403")
	fs.Var(&o.corsOrigins, "cors-origin", "origin allowed to call from a browser page on another origin, e.g. https://console.example.org (repeatable; * for any, never with credentials); none by default")
	o.reflection = fs.Bool("reflection", true, "serve gRPC server reflection (v1 and v1alpha)")
	o.console = fs.Bool("console", true, "serve the web console at /")
	o.metrics = fs.Bool("metrics", true, "serve Prometheus /metrics")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve /metrics on this address instead of on --addr (Host checked against loopback names, IP addresses and --allowed-host; a non-loopback address is logged at WARN)")
	fs.BoolVar(&cfg.AccessLog, "access-log", false, "log one line per request at info, when its response ends (a stream: when it ends): procedure or path, code, status, duration, bytes, bytes_in, client, subject")
	o.logLevel = fs.String("log-level", "info", "log level: debug (also every refused request, with its reason), info, warn, error")
	o.logFormat = fs.String("log-format", "text", "log format on stderr: text (key=value) or json (one object per line)")
	describeBounds(fs, serveBounds)
	return fs, o
}

func serveCmd(ctx context.Context, args []string, stderr io.Writer) error {
	cfg := app.Defaults()
	cfg.Version = versionString()
	fs, o := newServeFlags(&cfg, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArguments(fs); err != nil {
		return err
	}
	if err := checkBounds(fs, serveBounds); err != nil {
		// Reported with the rest of the config's errors, but each flag
		// once: the config's own about a flag out of bounds are dropped.
		return errors.Join(err, withoutFlags(cfg.Validate(), err))
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger, err := newLogger(stderr, *o.logFormat, *o.logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	cfg.AllowedHosts, cfg.CORSOrigins = o.allowedHosts, o.corsOrigins
	cfg.DisableReflection, cfg.DisableConsole, cfg.DisableMetrics = !*o.reflection, !*o.console, !*o.metrics
	tp, err := app.TracerProviderFromEnv(ctx, cfg.Version)
	if err != nil {
		return err
	}
	if tp != nil {
		cfg.TracerProvider = tp
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				logger.Warn("flushing traces", "err", err)
			}
		}()
		logger.Info("tracing on: OTLP over HTTP")
	}
	endDelay, stop := secondSignal()
	defer stop()
	cfg.EndDelay = endDelay
	return app.Run(ctx, cfg)
}

// secondSignal returns a channel closed by the second SIGTERM or interrupt
// (the first ends ctx), which ends the shutdown delay at once, and the
// function that stops listening for it. It listens from the start, so a
// second signal that comes right after the first is not lost.
func secondSignal() (<-chan struct{}, func()) {
	end, done := make(chan struct{}), make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer signal.Stop(sig)
		for n := 0; ; {
			select {
			case <-sig:
				if n++; n == 2 {
					close(end)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return end, func() { close(done) }
}

// newLogger is the server's slog logger: text or JSON lines on w.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log-format %q: want text or json", format)
	}
}

// withoutFlags is the errors of err (errors.Join trees flattened) except
// those about a flag that reported names: each begins with the flag's name.
func withoutFlags(err, reported error) error {
	if err == nil {
		return nil
	}
	var named []string
	for _, r := range leaves(reported) {
		named = append(named, strings.SplitN(r.Error(), " ", 2)[0]+" ")
	}
	var keep []error
	for _, e := range leaves(err) {
		if !slices.ContainsFunc(named, func(n string) bool { return strings.HasPrefix(e.Error(), n) }) {
			keep = append(keep, e)
		}
	}
	return errors.Join(keep...)
}

// leaves flattens errors.Join trees into their errors.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}
