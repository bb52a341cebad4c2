package app_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// runLogged runs app.Run with cfg until the test ends and returns the
// submatches of the first log line matching re.
func runLogged(t *testing.T, cfg app.Config, re *regexp.Regexp) []string {
	t.Helper()
	var log logbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			return m
		}
		if time.Now().After(deadline) { // a hang guard
			t.Fatalf("no line matching %s in %s", re, log.String())
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestPprofServedOnItsOwnLoopbackListener: --pprof-addr ":0" binds
// 127.0.0.1, serves the profiles there and nowhere else.
func TestPprofServedOnItsOwnLoopbackListener(t *testing.T) {
	cfg := ringtest.Config()
	cfg.PprofAddr = ":0"
	m := runLogged(t, cfg, regexp.MustCompile(`(?s)msg="pprof serving" addr=(\S+).*msg="ringcast serving" addr=(\S+)|msg="ringcast serving" addr=(\S+).*msg="pprof serving" addr=(\S+)`))
	pp, main := m[1]+m[4], m[2]+m[3]
	if host, _, _ := net.SplitHostPort(pp); host != "127.0.0.1" {
		t.Fatalf("pprof on %s, want loopback", pp)
	}
	if code, body := get(t, "http://"+pp+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("pprof index: %d %.200s", code, body)
	}
	if code, body := get(t, "http://"+pp+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Fatalf("goroutine profile: %d %.200s", code, body)
	}
	if code, body := get(t, "http://"+main+"/debug/pprof/goroutine?debug=1"); strings.Contains(body, "goroutine profile") {
		t.Fatalf("the main listener serves pprof: %d", code)
	}
}

func TestPprofOffByDefaultAndBadAddressRejected(t *testing.T) {
	if app.Defaults().PprofAddr != "" {
		t.Fatal("pprof is on by default")
	}
	cfg := ringtest.Config()
	cfg.PprofAddr = "no-port"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "pprof-addr") {
		t.Fatalf("Validate: %v, want a pprof-addr error", err)
	}
}
