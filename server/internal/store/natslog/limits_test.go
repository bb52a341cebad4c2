package natslog_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go/jetstream"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/settings"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// streamConfig is the JetStream config of the embedded store's stream in
// dir, read with the server stopped.
func streamConfig(t *testing.T, dir string) jetstream.StreamConfig {
	t.Helper()
	_, nc := embedded(t, dir)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, natslog.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	return info.Config
}

// TestDurableStoreStartsBounded: a stream the server creates is bounded by
// default (settings.NATSMaxBytes, settings.NATSMaxAge), and ServerStatus
// reports the stream's limits on every protocol; negative flags lift the
// bounds, with a warning each; an existing stream is used as it is, its
// own limits reported, with a line saying so.
func TestDurableStoreStartsBounded(t *testing.T) {
	status := func(t *testing.T, s *ringtest.Server) []*ringcastv1.StoreLimits {
		var out []*ringcastv1.StoreLimits
		for _, p := range ringtest.Protocols {
			res, err := s.Client(p).GetServerStatus(context.Background(), connect.NewRequest(&ringcastv1.GetServerStatusRequest{}))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out = append(out, res.Msg.GetStatus().GetLimits().GetStore())
		}
		return out
	}
	start := func(t *testing.T, dir string, maxBytes int64, maxAge time.Duration) (*ringtest.Server, *logbuf.Buffer) {
		cfg := ringtest.Config()
		cfg.Store = app.Store{Kind: app.StoreEmbedded, DataDir: dir, NATSMaxBytes: maxBytes, NATSMaxAge: maxAge}
		logs := &logbuf.Buffer{}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		return ringtest.Start(t, cfg), logs
	}
	warned := func(logs *logbuf.Buffer, what string) bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, what) {
				return true
			}
		}
		return false
	}

	t.Run("defaults", func(t *testing.T) {
		dir := t.TempDir()
		s, logs := start(t, dir, 0, 0)
		for _, got := range status(t, s) {
			if got.GetMaxBytes() != 1<<30 || got.GetMaxAge().AsDuration() != 7*24*time.Hour || got.GetMaxCommits() != 0 {
				t.Errorf("store limits %v, want 1 GiB and 168h", got)
			}
		}
		if warned(logs, "limit") {
			t.Errorf("the defaults warned of limits:\n%s", logs.String())
		}
		s.Stop()
		if c := streamConfig(t, dir); c.MaxBytes != settings.NATSMaxBytes.Default || c.MaxAge != settings.NATSMaxAge.Default || c.MaxMsgs != -1 {
			t.Errorf("stream created with max_bytes %d, max_age %v, max_msgs %d; want the settings' defaults", c.MaxBytes, c.MaxAge, c.MaxMsgs)
		}

		// Started again with other limits: the stream is used as it is.
		s, logs = start(t, dir, -1, 48*time.Hour)
		for _, got := range status(t, s) {
			if got.GetMaxBytes() != 1<<30 || got.GetMaxAge().AsDuration() != 7*24*time.Hour {
				t.Errorf("an existing stream's limits reported as %v, want its own", got)
			}
		}
		if !strings.Contains(logs.String(), "an existing stream is used as it is") || !warned(logs, "--nats-max-bytes negative") {
			t.Errorf("want a warning for the lifted byte bound and a line saying the stream is used as it is:\n%s", logs.String())
		}
	})

	t.Run("lifted", func(t *testing.T) {
		dir := t.TempDir()
		s, logs := start(t, dir, -1, -time.Second)
		for _, got := range status(t, s) {
			if got == nil || got.GetMaxBytes() != 0 || got.GetMaxAge() != nil || got.GetMaxCommits() != 0 {
				t.Errorf("store limits %v, want present and all unbounded", got)
			}
		}
		for _, what := range []string{"--nats-max-bytes negative", "--nats-max-age negative", "the stream has no limits"} {
			if !warned(logs, what) {
				t.Errorf("no warning %q:\n%s", what, logs.String())
			}
		}
		s.Stop()
		if c := streamConfig(t, dir); c.MaxBytes != -1 || c.MaxAge != 0 {
			t.Errorf("stream created with max_bytes %d, max_age %v; want none", c.MaxBytes, c.MaxAge)
		}
	})
}

// TestMemoryStoreReportsNoStoreLimits: with the memory store the ring is
// the log, and ServerStatus carries no store limits.
func TestMemoryStoreReportsNoStoreLimits(t *testing.T) {
	s := ringtest.Start(t, ringtest.Config())
	res, err := s.Client(ringtest.Protocols[0]).GetServerStatus(context.Background(), connect.NewRequest(&ringcastv1.GetServerStatusRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Msg.GetStatus().GetLimits().GetStore(); got != nil {
		t.Errorf("memory store limits %v, want none", got)
	}
}

// TestByteLimitAboveJetStreamStorageIsExplained: JetStream sets a
// stream's byte limit aside from its storage when it creates the stream;
// a limit above what it has fails Open with an error naming the flag.
func TestByteLimitAboveJetStreamStorageIsExplained(t *testing.T) {
	opts := natslog.EmbeddedOptions(t.TempDir())
	opts.JetStreamMaxStore = 64 << 10
	ns, err := natslog.StartServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := natslog.ConnectEmbedded(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = natslog.Open(ctx, nc, natslog.Options{MaxBytes: settings.NATSMaxBytes.Default})
	if err == nil || !strings.Contains(err.Error(), "--nats-max-bytes") || !strings.Contains(err.Error(), "1073741824 bytes") {
		t.Fatalf("Open with a byte limit above JetStream's storage: %v; want an error naming --nats-max-bytes", err)
	}
	if _, err := natslog.Open(ctx, nc, natslog.Options{MaxBytes: 32 << 10}); err != nil {
		t.Fatalf("Open with a byte limit JetStream has room for: %v", err)
	}
}
