package natslog

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/settings"
)

// EmbeddedOptions are the options of an in-process nats-server with
// JetStream file storage in dir, reachable only in process (no listener).
// Its max_payload fits the default request limits (FitPayload); serve
// fits it to the limits it was given.
func EmbeddedOptions(dir string) *server.Options {
	o := &server.Options{
		ServerName: "ringcast-embedded",
		DontListen: true,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		// One atomic batch holds a whole PublishBatch (up to
		// hub.MaxCommitsPerBatch commits, the proto's rule).
		JetStreamLimits: server.JSLimitOpts{MaxBatchSize: hub.MaxCommitsPerBatch},
	}
	FitPayload(o, settings.MaxRequestBytes.Default, settings.MaxFactBytes.Default)
	return o
}

// StartServer starts a nats-server in process and waits until it accepts
// connections. A start the server gives up on (a listener that cannot be
// opened, JetStream that cannot start on its store) is returned at once,
// with the server's reason, rather than after the wait; an address in use
// wraps syscall.EADDRINUSE's text ("address already in use"). The
// server's own log is not kept.
func StartServer(opts *server.Options) (*server.Server, error) {
	if opts.StoreDir != "" {
		if err := os.MkdirAll(opts.StoreDir, 0o755); err != nil {
			return nil, fmt.Errorf("data-dir: %w", err)
		}
		abs, err := filepath.Abs(opts.StoreDir)
		if err != nil {
			return nil, err
		}
		opts.StoreDir = abs
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats-server: %w", err)
	}
	fatal := &fatalLog{failed: make(chan struct{})}
	ns.SetLogger(fatal, false, false)
	go ns.Start()
	for deadline := time.Now().Add(30 * time.Second); !ns.ReadyForConnections(100 * time.Millisecond); {
		select {
		case <-fatal.failed:
			ns.Shutdown()
			ns.WaitForShutdown()
			return nil, fmt.Errorf("start nats-server: %s", fatal.msg)
		default:
		}
		if time.Now().After(deadline) {
			ns.Shutdown()
			ns.WaitForShutdown()
			return nil, errors.New("start nats-server: not ready after 30s")
		}
	}
	return ns, nil
}

// fatalLog is a nats-server logger that keeps the first fatal message (the
// server gave up starting) and drops everything else.
type fatalLog struct {
	once   sync.Once
	failed chan struct{} // closed once msg is set
	msg    string
}

// Fatalf records the first fatal message; the server goes on running
// until it is shut down.
func (l *fatalLog) Fatalf(format string, v ...any) {
	l.once.Do(func() {
		l.msg = fmt.Sprintf(format, v...)
		close(l.failed)
	})
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

// ConnectEmbedded connects to an in-process server without the network.
func ConnectEmbedded(ns *server.Server) (*nats.Conn, error) {
	return nats.Connect("", nats.InProcessServer(ns), nats.Name("ringcast"), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1))
}

// Connect connects to a NATS cluster through any of urls (each may be a
// comma-separated list, and may carry user:pass@), with a credentials file
// when creds is not empty. It fails at once when no server answers; once
// connected, the client reconnects for ever, and logs it.
func Connect(urls []string, creds string, logger *slog.Logger) (*nats.Conn, error) {
	var all []string
	for _, u := range urls {
		for _, p := range strings.Split(u, ",") {
			if p = strings.TrimSpace(p); p != "" {
				all = append(all, p)
			}
		}
	}
	if len(all) == 0 {
		return nil, errors.New("nats-url: at least one URL is required with --store jetstream")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := []nats.Option{
		nats.Name("ringcast"),
		nats.MaxReconnects(-1),
		// A publish while disconnected fails at once instead of waiting
		// in a buffer to be sent after its caller was told it failed.
		nats.ReconnectBufSize(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(5 * time.Second),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) { logDisconnect(logger, c, err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
	}
	if creds != "" {
		if err := checkCreds(creds); err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(creds))
	}
	nc, err := nats.Connect(strings.Join(all, ","), opts...)
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
			return nil, fmt.Errorf("connect to NATS: %w: the server refused the credentials (--nats-creds, or user:password@ in --nats-url)", err)
		}
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	return nc, nil
}

// logDisconnect logs the loss of the connection to NATS at Warn, but a
// close ringcast made itself (the connection closed, no error) at Debug:
// a clean stop is not a lost connection.
func logDisconnect(logger *slog.Logger, c *nats.Conn, err error) {
	if err == nil && c.IsClosed() {
		logger.Debug("NATS connection closed")
		return
	}
	logger.Warn("NATS connection lost", "err", err)
}

// checkCreds reads a credentials file as the NATS client will when it
// connects (a user JWT and the user's nkey seed), so that a file that is
// missing or is not one fails at start with its name, whether or not a
// server asks for it.
func checkCreds(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("nats-creds: %w", err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	clear(data)
	if err != nil {
		return fmt.Errorf("nats-creds %s: not a NATS credentials file (a user JWT and its nkey seed): %w", path, err)
	}
	kp.Wipe()
	return nil
}
