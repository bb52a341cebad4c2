package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/settings"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// The stores (docs/scaling.md).
const (
	StoreMemory    = "memory"    // the ring alone: one process, a new epoch per boot
	StoreEmbedded  = "embedded"  // an in-process nats-server, JetStream files in DataDir
	StoreJetStream = "jetstream" // a NATS JetStream cluster at NATSURLs
)

// Store selects where commits live. The zero Store is memory.
type Store struct {
	// Kind is StoreMemory (default), StoreEmbedded or StoreJetStream.
	Kind string
	// DataDir holds the embedded server's JetStream files (embedded).
	DataDir string
	// NATSURLs are the cluster's URLs (jetstream); each may be a comma
	// list and may carry user:pass@. NATSCreds is a credentials file.
	NATSURLs  []string
	NATSCreds string
	// NATSStream names the stream (default "ringcast"). The limits apply
	// when ringcast creates it; an existing stream is used as it is, with
	// its own limits: NATSReplicas 1 (default) or 3; NATSMaxBytes and
	// NATSMaxAge, 0 for their defaults (settings.NATSMaxBytes, 1 GiB, and
	// settings.NATSMaxAge, 7 days) and negative for no bound (logged at
	// Warn); NATSMaxMsgs (0: no bound). The duplicate window is the hub's
	// DedupeWindow.
	NATSStream   string
	NATSReplicas int
	NATSMaxBytes int64
	NATSMaxAge   time.Duration
	NATSMaxMsgs  int64
	// NATSConn, when set, is used instead of NATSURLs (tests, embedding).
	NATSConn *nats.Conn
	// Recover serves the stream under a new epoch (--store-recover): a
	// restored one, or a damaged one (acknowledged commits lost, holes,
	// oldest commits gone without its limits discarding them) instead of
	// refusing to start.
	Recover bool
}

func (s Store) validate() []error {
	var errs []error
	switch s.Kind {
	case "", StoreMemory:
	case StoreEmbedded:
		if s.DataDir == "" {
			errs = append(errs, errors.New("store embedded needs --data-dir"))
		}
	case StoreJetStream:
		if len(s.NATSURLs) == 0 && s.NATSConn == nil {
			errs = append(errs, errors.New("store jetstream needs --nats-url"))
		}
	default:
		errs = append(errs, fmt.Errorf("store %q: want memory, embedded or jetstream", s.Kind))
	}
	errs = append(errs, settings.NATSReplicas.Check(s.NATSReplicas), settings.NATSMaxBytes.Check(s.NATSMaxBytes),
		settings.NATSMaxAge.Check(s.NATSMaxAge), settings.NATSMaxMsgs.Check(s.NATSMaxMsgs))
	if s.NATSReplicas == 2 { // within the row's bounds, but JetStream replicates to 1 or 3
		errs = append(errs, errors.New("nats-replicas must be 1 or 3, not 2"))
	}
	return errs
}

// nameFiles adds to an error saying the embedded store's stream is
// damaged where the stream's message blocks are.
func (s Store) nameFiles(err error) error {
	if !errors.Is(err, hub.ErrLogDamaged) || s.Kind != StoreEmbedded || s.NATSConn != nil {
		return err
	}
	return fmt.Errorf("%w (its message blocks: %s)", err, filepath.Join(s.DataDir, "jetstream", "$G", "streams", s.stream(), "msgs"))
}

// openStore opens the Log of a durable store (nil for memory) and returns
// what closes it once the hub is closed.
func openStore(ctx context.Context, cfg Config) (hub.Log, func(), error) {
	s := cfg.Store
	if s.Kind == "" || s.Kind == StoreMemory {
		return nil, func() {}, nil
	}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	nc := s.NATSConn
	switch {
	case nc != nil:
	case s.Kind == StoreEmbedded:
		nopts := natslog.EmbeddedOptions(s.DataDir)
		natslog.FitPayload(nopts, cfg.MaxRequestBytes, cfg.MaxFactBytes)
		ns, err := natslog.StartServer(nopts)
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() { ns.Shutdown(); ns.WaitForShutdown() })
		if nc, err = natslog.ConnectEmbedded(ns); err != nil {
			closeAll()
			return nil, nil, err
		}
		closers = append(closers, nc.Close)
	default:
		var err error
		if nc, err = natslog.Connect(s.NATSURLs, s.NATSCreds, cfg.Logger); err != nil {
			return nil, nil, err
		}
		closers = append(closers, nc.Close)
	}
	if !s.Recover {
		// A recovery reads the whole stream first: it is bounded only by
		// ctx (a signal).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	maxBytes, maxAge := s.limits()
	l, err := natslog.Open(ctx, nc, natslog.Options{
		Stream:     s.NATSStream,
		Replicas:   s.NATSReplicas,
		MaxBytes:   maxBytes,
		MaxAge:     maxAge,
		MaxMsgs:    s.NATSMaxMsgs,
		Duplicates: cfg.DedupeWindow,
		Logger:     cfg.Logger,
		Recover:    s.Recover,
		// The largest commit the request limits allow: an external NATS
		// whose max_payload is smaller is named at start.
		LargestCommit: hub.MaxCommitBytes(cfg.MaxRequestBytes, cfg.MaxFactBytes),
		// The embedded server has no listener: only this Log appends to
		// its stream.
		SoleWriter: s.Kind == StoreEmbedded && s.NATSConn == nil,
	})
	if err != nil {
		closeAll()
		return nil, nil, s.nameFiles(err)
	}
	if c := l.Config(); c.Duplicates != cfg.DedupeWindow {
		cfg.Logger.Warn("the stream's duplicate window differs from --dedupe-window; JetStream's applies across restarts and replicas",
			"stream", c.Name, "duplicates", c.Duplicates, "dedupe_window", cfg.DedupeWindow)
	}
	s.warnLimits(cfg.Logger, l.StoreLimits())
	return natslog.NewStore(l, nc), closeAll, nil
}

// limits is the byte and age limits of a stream ringcast creates, as
// natslog takes them (0: no bound): a zero field's default
// (settings.NATSMaxBytes, settings.NATSMaxAge), none for a negative one.
func (s Store) limits() (maxBytes int64, maxAge time.Duration) {
	maxBytes, maxAge = settings.NATSMaxBytes.Or(s.NATSMaxBytes), settings.NATSMaxAge.Or(s.NATSMaxAge)
	return max(maxBytes, 0), max(maxAge, 0)
}

// warnLimits logs, at Warn, each bound of the stream lifted by its flag,
// and a stream in use with no limit at all (one created before the
// defaults, or outside ringcast: used as it is); at Info, an existing
// stream whose limits are not the flags'.
func (s Store) warnLimits(log *slog.Logger, got hub.StoreLimits) {
	if s.NATSMaxBytes < 0 {
		log.Warn("no byte limit for a stream ringcast creates (--nats-max-bytes negative): it keeps every commit its age limit keeps, and its disk use grows with the publish rate until JetStream's storage is exhausted")
	}
	if s.NATSMaxAge < 0 {
		log.Warn("no age limit for a stream ringcast creates (--nats-max-age negative): it keeps every commit its byte limit keeps, however old")
	}
	maxBytes, maxAge := s.limits()
	switch {
	case got == hub.StoreLimits{}:
		log.Warn("the stream has no limits: it keeps every commit and its disk use grows without bound (an existing stream is used as it is: set its limits with the NATS tools)",
			"stream", s.stream())
	case got != hub.StoreLimits{MaxBytes: maxBytes, MaxAge: maxAge, MaxCommits: s.NATSMaxMsgs}:
		log.Info("the stream's limits are not those of --nats-max-bytes, --nats-max-age and --nats-max-msgs: an existing stream is used as it is",
			"stream", s.stream(), "max_bytes", got.MaxBytes, "max_age", got.MaxAge, "max_msgs", got.MaxCommits)
	}
}

// stream is the stream's name.
func (s Store) stream() string {
	if s.NATSStream == "" {
		return natslog.DefaultStream
	}
	return s.NATSStream
}
