package natslog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestStoreConditionsAreNamed: a store with no room refuses a commit with
// an error that says "store full", not the NATS client's words; a store
// that does not answer (its server stopped) is "store unavailable", on
// Append and Range.
func TestStoreConditionsAreNamed(t *testing.T) {
	opts := natslog.EmbeddedOptions(t.TempDir())
	opts.JetStreamMaxStore = 256 << 10
	ns, err := natslog.StartServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	nc, err := natslog.ConnectEmbedded(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// A hang guard only: the conditions are told by the NATS server's
	// answers (or its closed connection), not by a request timing out.
	l := openLog(t, nc, natslog.Options{Timeout: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	big := strings.Repeat("x", 16<<10)
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		_, full = l.Append(ctx, time.Now(), hub.Commit{Facts: []*ringcastv1.Fact{{Topic: "t", Type: "x", Payload: &ringcastv1.Fact_BinaryData{BinaryData: []byte(big)}}}})
	}
	if full == nil {
		t.Fatal("100 commits of 16 KiB fit in a 256 KiB store")
	}
	if !errors.Is(full, natslog.ErrStoreFull) || !strings.HasPrefix(full.Error(), "store full: ") || strings.Contains(full.Error(), "nats:") {
		t.Fatalf("append to a full store: %q; want a \"store full\" error that does not quote the NATS client", full)
	}
	nc.Close()
	_, err = l.Append(ctx, time.Now(), commit("", 1))
	if !errors.Is(err, natslog.ErrStoreUnavailable) || !strings.HasPrefix(err.Error(), "store unavailable: ") || strings.Contains(err.Error(), "nats:") {
		t.Fatalf("append with the store gone: %q; want a \"store unavailable\" error that does not quote the NATS client", err)
	}
	if _, _, err := l.Range(ctx); !errors.Is(err, natslog.ErrStoreUnavailable) {
		t.Fatalf("Range with the store gone: %v, want ErrStoreUnavailable", err)
	}
}
