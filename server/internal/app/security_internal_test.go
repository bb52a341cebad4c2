package app

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestOpenNonLoopbackWarns: --allow-unauthenticated lets a non-loopback
// server start without auth, and it says so with a WARN line every time.
func TestOpenNonLoopbackWarns(t *testing.T) {
	cfg := Defaults()
	cfg.Addr = "0.0.0.0:8080"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--allow-unauthenticated") {
		t.Fatalf("validate without the flag: %v", err)
	}
	cfg.AllowUnauthenticated = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logSecurity(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "--allow-unauthenticated") {
		t.Fatalf("log: %q", buf.String())
	}
	buf.Reset()
	cfg.Addr = "127.0.0.1:8080"
	logSecurity(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	if buf.Len() != 0 {
		t.Fatalf("loopback logged %q", buf.String())
	}
}

// TestNonLoopbackSideListenersWarn: a non-loopback --metrics-addr, and a
// non-loopback --pprof-addr (allowed with --pprof-allow-remote), are each
// logged with a WARN line at start; loopback ones are not.
func TestNonLoopbackSideListenersWarn(t *testing.T) {
	cfg := Defaults()
	cfg.MetricsAddr, cfg.PprofAddr, cfg.PprofAllowRemote = "0.0.0.0:9090", "[::]:6060", true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logSecurity(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	for _, want := range []string{"--metrics-addr", "--pprof-allow-remote"} {
		if !strings.Contains(buf.String(), want) || strings.Count(buf.String(), "level=WARN") != 2 {
			t.Fatalf("log %q: want a WARN line naming %s", buf.String(), want)
		}
	}
	buf.Reset()
	cfg.MetricsAddr, cfg.PprofAddr = "127.0.0.1:9090", "6060"
	logSecurity(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	if buf.Len() != 0 {
		t.Fatalf("loopback side listeners logged %q", buf.String())
	}
}
