package app_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// getHost sends GET path with Host host to addr over a new connection and
// returns the status.
func getHost(t *testing.T, addr, path, host string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", path, host, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// checkSideEdge proves the main port's edge on a side listener at addr
// serving path: Host checked (DNS rebinding), an unsent body not waited
// for, idle connections closed, and one client's connections capped at a
// quarter of 64.
func checkSideEdge(t *testing.T, addr, path string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	for host, want := range map[string]int{
		"127.0.0.1:" + port: http.StatusOK, "localhost:" + port: http.StatusOK, "[::1]:" + port: http.StatusOK,
		"192.0.2.7:" + port: http.StatusOK, "metrics.internal:" + port: http.StatusOK,
		"evil.example:" + port: http.StatusForbidden, "evil.example": http.StatusForbidden,
	} {
		if got := getHost(t, addr, path, host); got != want {
			t.Errorf("GET %s with Host %s: %d, want %d", path, host, got, want)
		}
	}
	sendUnsentBodyH1(t, addr, unsentBody{method: "GET", path: path})

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = idle.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("an idle keep-alive connection: %v, want it closed", err)
	}

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 16 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard only
	xr := bufio.NewReader(extra)
	refused, err := http.ReadResponse(xr, nil)
	if err != nil {
		t.Fatalf("connection 17 of one client: %v, want a 429", err)
	}
	reason, _ := io.ReadAll(refused.Body)
	if refused.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(reason), "side listener") {
		t.Fatalf("connection 17 of one client: %d %q, want a 429 naming the side listener's bound", refused.StatusCode, reason)
	}
	if _, err := xr.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("connection 17 of one client was not closed: %v", err)
	}
}

// TestMetricsListenerHasTheEdge: --metrics-addr checks Host (loopback
// names, IP addresses and --allowed-host names pass; others 403), does not
// wait for a body that never comes, closes idle connections, and caps one
// client's connections.
func TestMetricsListenerHasTheEdge(t *testing.T) {
	cfg := ringtest.Config()
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.AllowedHosts = []string{"metrics.internal"}
	cfg.Edge.ReadTimeout = 200 * time.Millisecond
	cfg.Edge.IdleTimeout = time.Second
	srv := ringtest.Start(t, cfg)
	checkSideEdge(t, srv.App().MetricsAddr(), "/metrics")
}

// TestPprofListenerHasTheEdge: --pprof-addr has the same edge.
func TestPprofListenerHasTheEdge(t *testing.T) {
	cfg := ringtest.Config()
	cfg.PprofAddr = "127.0.0.1:0"
	cfg.AllowedHosts = []string{"metrics.internal"}
	cfg.Edge.ReadTimeout = 200 * time.Millisecond
	cfg.Edge.IdleTimeout = time.Second
	m := runLogged(t, cfg, regexp.MustCompile(`msg="pprof serving" addr=(\S+)`))
	checkSideEdge(t, m[1], "/debug/pprof/cmdline")
}

// TestPprofRemoteNeedsAcknowledgement: a non-loopback --pprof-addr is
// refused, by name, unless --pprof-allow-remote; a bare port binds
// loopback and needs nothing.
func TestPprofRemoteNeedsAcknowledgement(t *testing.T) {
	cfg := ringtest.Config()
	for _, addr := range []string{"0.0.0.0:6060", "[::]:6060", "192.0.2.7:6060", "pprof.example:6060"} {
		cfg.PprofAddr, cfg.PprofAllowRemote = addr, false
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--pprof-allow-remote") {
			t.Errorf("--pprof-addr %s: %v, want an error naming --pprof-allow-remote", addr, err)
		}
		cfg.PprofAllowRemote = true
		if err := cfg.Validate(); err != nil {
			t.Errorf("--pprof-addr %s --pprof-allow-remote: %v", addr, err)
		}
	}
	for _, addr := range []string{"6060", ":6060", "127.0.0.1:6060", "[::1]:6060", "localhost:6060"} {
		cfg.PprofAddr, cfg.PprofAllowRemote = addr, false
		if err := cfg.Validate(); err != nil {
			t.Errorf("--pprof-addr %s: %v", addr, err)
		}
	}
}
