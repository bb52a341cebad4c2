package edge_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func do(t *testing.T, method, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	return res, string(b)
}

const statusPath = ringcastv1connect.EventServiceGetServerStatusProcedure + "?encoding=json&message=%7B%7D"

// TestForeignHostIsRefused: an open loopback server answers 403 to a Host
// that is not a loopback name (DNS rebinding), before any handler runs;
// --allowed-host adds names; a server with auth does not check Host.
func TestForeignHostIsRefused(t *testing.T) {
	cfg := ringtest.Config()
	cfg.AllowedHosts = []string{"ringcast.internal"}
	srv := ringtest.Start(t, cfg)
	_, port, _ := strings.Cut(srv.Addr, ":")
	for host, want := range map[string]int{
		"evil.example:" + port:       http.StatusForbidden,
		"evil.example":               http.StatusForbidden,
		"127.0.0.1.nip.example":      http.StatusForbidden,
		"localhost:" + port:          http.StatusOK,
		"app.localhost:" + port:      http.StatusOK,
		"127.0.0.1:" + port:          http.StatusOK,
		"[::1]:" + port:              http.StatusOK,
		"ringcast.internal:" + port:  http.StatusOK,
		"RINGCAST.INTERNAL":          http.StatusOK,
		"ringcast.internal.evil.com": http.StatusForbidden,
	} {
		for _, path := range []string{statusPath, "/events?snapshot=nope", "/metrics"} {
			res, body := do(t, http.MethodGet, srv.URL+path, map[string]string{"Host": host})
			got := res.StatusCode
			if want == http.StatusOK && path == "/events?snapshot=nope" {
				want := http.StatusBadRequest // reached the handler
				if got != want {
					t.Errorf("Host %q %s: %d, want %d", host, path, got, want)
				}
				continue
			}
			if got != want {
				t.Errorf("Host %q %s: %d %s, want %d", host, path, got, body, want)
			}
		}
	}

	k := authtest.NewKeys(t)
	acfg := ringtest.Config()
	acfg.Auth, acfg.JWTKeyFile = app.AuthJWT, k.SecretFile
	asrv := ringtest.Start(t, acfg)
	if res, _ := do(t, http.MethodGet, asrv.URL+statusPath, map[string]string{"Host": "ringcast.example.org"}); res.StatusCode != http.StatusOK {
		t.Errorf("with auth jwt, a named Host: %d, want 200", res.StatusCode)
	}
}

// TestCORS: preflights answer 204 (never 405) with the headers Connect,
// gRPC-Web and /events need, for listed origins only; "*" never comes with
// credentials; nothing is allowed by default.
func TestCORS(t *testing.T) {
	const origin = "https://console.test"
	preflight := func(url, from string) *http.Response {
		res, _ := do(t, http.MethodOptions, url, map[string]string{
			"Origin":                         from,
			"Access-Control-Request-Method":  "POST",
			"Access-Control-Request-Headers": "authorization,connect-protocol-version,content-type,x-grpc-web",
		})
		return res
	}
	publish := ringcastv1connect.EventServicePublishProcedure

	def := ringtest.Start(t, ringtest.Config())
	res := preflight(def.URL+publish, origin)
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("default: preflight %d, ACAO %q; want 204 and no origin allowed", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	if res, _ := do(t, http.MethodGet, def.URL+"/events?snapshot=nope", map[string]string{"Origin": origin}); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("default: /events allows %q", res.Header.Get("Access-Control-Allow-Origin"))
	}

	cfg := ringtest.Config()
	cfg.CORSOrigins = []string{origin}
	srv := ringtest.Start(t, cfg)
	for _, path := range []string{publish, ringcastv1connect.EventServiceSubscribeEventsProcedure, "/events"} {
		res := preflight(srv.URL+path, origin)
		h := res.Header
		if res.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != origin || h.Get("Access-Control-Allow-Credentials") != "true" ||
			!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") ||
			!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "connect-protocol-version") {
			t.Errorf("%s: preflight %d %v", path, res.StatusCode, h)
		}
		if res := preflight(srv.URL+path, "https://other.test"); res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: other origin allowed: %v", path, res.Header)
		}
	}
	res, _ = do(t, http.MethodGet, srv.URL+"/events?snapshot=nope", map[string]string{"Origin": origin})
	if res.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("/events from the allowed origin: ACAO %q", res.Header.Get("Access-Control-Allow-Origin"))
	}
	res, _ = do(t, http.MethodPost, srv.URL+publish, map[string]string{"Origin": origin, "Content-Type": "application/json"})
	if !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Grpc-Status") {
		t.Errorf("exposed headers %q", res.Header.Get("Access-Control-Expose-Headers"))
	}

	cfg = ringtest.Config()
	cfg.CORSOrigins = []string{"*"}
	any := ringtest.Start(t, cfg)
	res = preflight(any.URL+publish, "https://anywhere.test")
	if res.Header.Get("Access-Control-Allow-Origin") != "*" || res.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("*: %v", res.Header)
	}

	bad := ringtest.Config()
	bad.CORSOrigins = []string{"https://console.test/path", "console.test"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "console.test/path") {
		t.Errorf("bad origins: %v", err)
	}
}

// TestEndpointsSwitchOff: --reflection=false, --console=false,
// --metrics=false remove those endpoints; --metrics-addr moves /metrics to
// its own listener.
func TestEndpointsSwitchOff(t *testing.T) {
	cfg := ringtest.Config()
	cfg.DisableReflection, cfg.DisableConsole, cfg.DisableMetrics = true, true, true
	srv := ringtest.Start(t, cfg)
	for _, path := range []string{"/", "/metrics", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"} {
		if res, _ := do(t, http.MethodGet, srv.URL+path, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, res.StatusCode)
		}
	}
	if res, _ := do(t, http.MethodGet, srv.URL+statusPath, nil); res.StatusCode != http.StatusOK {
		t.Errorf("status: %d", res.StatusCode)
	}

	cfg = ringtest.Config()
	cfg.MetricsAddr = "127.0.0.1:0"
	srv = ringtest.Start(t, cfg)
	if res, _ := do(t, http.MethodGet, srv.URL+"/metrics", nil); res.StatusCode == http.StatusOK {
		t.Errorf("/metrics still on --addr")
	}
	addr := srv.App().MetricsAddr()
	if res, body := do(t, http.MethodGet, "http://"+addr+"/metrics", nil); res.StatusCode != http.StatusOK || !strings.Contains(body, "ringcast_head_seq") {
		t.Errorf("/metrics on %s: %d", addr, res.StatusCode)
	}
}
