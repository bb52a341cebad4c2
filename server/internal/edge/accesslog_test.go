package edge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// logBuf holds a server's JSON log lines (debug and up).
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// logTo makes cfg log JSON lines, debug and up, into the returned buffer.
func logTo(cfg *app.Config) *logBuf {
	l := &logBuf{}
	cfg.Logger = slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return l
}

// lines are the logged lines whose msg is msg and whose fields include
// every one of match.
func (l *logBuf) lines(t *testing.T, msg string, match map[string]any) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range match {
			if m[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// one is the one logged line matching, failing the test otherwise.
func (l *logBuf) one(t *testing.T, msg string, match map[string]any) map[string]any {
	t.Helper()
	got := l.lines(t, msg, match)
	if len(got) != 1 {
		l.mu.Lock()
		all := l.b.String()
		l.mu.Unlock()
		t.Fatalf("%d %q lines with %v, want 1; the log:\n%s", len(got), msg, match, all)
	}
	return got[0]
}

func fact(topic string) *ringcastv1.Fact {
	return &ringcastv1.Fact{Topic: topic, Type: "t", Key: "k"}
}

// TestAccessLogOneLinePerRequest: with --access-log, every request on every
// protocol gets one line when its response has ended — a stream when it
// ends — with its procedure or path, its code, status, duration, bytes and
// client; a refusal's code is the refusal's. Refused requests are also
// logged at Debug with their reason, each by its kind.
func TestAccessLogOneLinePerRequest(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.AccessLog = true
			log := logTo(&cfg)
			srv := ringtest.Start(t, cfg)
			ctx := context.Background()
			c := srv.Client(p)
			if _, err := c.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact("a/b")}})); err != nil {
				t.Fatal(err)
			}
			_, err := c.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact("")}}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("publish with no topic: %v, want invalid_argument", err)
			}
			s, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{EndAtHead: true}))
			if err != nil {
				t.Fatal(err)
			}
			for s.Receive() {
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			s.Close()
			res, _ := do(t, http.MethodGet, srv.URL+"/healthz", nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("/healthz: %d", res.StatusCode)
			}
			if res, _ := do(t, http.MethodGet, srv.URL+statusPath, map[string]string{"Host": "evil.example"}); res.StatusCode != http.StatusForbidden {
				t.Fatalf("foreign Host: %d", res.StatusCode)
			}
			srv.Stop() // every handler has returned: every line is written

			publish := ringcastv1connect.EventServicePublishProcedure
			ok := log.one(t, "access", map[string]any{"procedure": publish, "code": "ok"})
			if ok["level"] != "INFO" || ok["client"] != "ip:127.0.0.1" || ok["bytes"].(float64) <= 0 || ok["bytes_in"].(float64) <= 0 ||
				ok["status"] != float64(200) || ok["duration"] == nil || ok["subject"] != nil {
				t.Errorf("publish line %v", ok)
			}
			log.one(t, "access", map[string]any{"procedure": publish, "code": "invalid_argument"})
			sub := log.one(t, "access", map[string]any{"procedure": ringcastv1connect.EventServiceSubscribeEventsProcedure, "code": "ok"})
			if sub["bytes"].(float64) <= 0 {
				t.Errorf("stream line %v", sub)
			}
			log.one(t, "access", map[string]any{"path": "/healthz", "code": "200", "status": float64(200)})
			log.one(t, "access", map[string]any{"path": ringcastv1connect.EventServiceGetServerStatusProcedure, "code": "403"})

			// At Debug: each refusal once, with its reason.
			r := log.one(t, "request refused", map[string]any{"refusal": "request", "procedure": publish, "code": "invalid_argument"})
			if r["level"] != "DEBUG" || r["client"] != "ip:127.0.0.1" || !strings.Contains(r["error"].(string), "topic") {
				t.Errorf("validation refusal line %v", r)
			}
			if h := log.one(t, "request refused", map[string]any{"refusal": "host"}); h["level"] != "DEBUG" || h["host"] != "evil.example" {
				t.Errorf("host refusal line %v", h)
			}
		})
	}
}

// TestAccessLogSSE: a GET /events stream gets its line when it ends, parked
// (its connection taken over from the HTTP server) or not; a bad query is
// refused 400 and logged at Debug.
func TestAccessLogSSE(t *testing.T) {
	for _, park := range []bool{false, true} {
		name := map[bool]string{false: "goroutine", true: "parked"}[park]
		t.Run(name, func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.AccessLog, cfg.ParkSSE = true, park
			log := logTo(&cfg)
			srv := ringtest.Start(t, cfg)
			hc := srv.HTTPClient(ringcast.ProtocolConnect)
			res := openSSE(t, hc, srv.URL)
			defer res.Body.Close()
			rd := bufio.NewReader(res.Body)
			for {
				l, err := rd.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(l, "event: caught-up") {
					break
				}
			}
			if bad, _ := do(t, http.MethodGet, srv.URL+"/events?snapshot=nope", nil); bad.StatusCode != http.StatusBadRequest {
				t.Fatalf("bad query: %d", bad.StatusCode)
			}
			hc.CloseIdleConnections()
			srv.Stop() // the stream ends (a parked one's connection closes)

			l := log.one(t, "access", map[string]any{"path": "/events", "code": "200"})
			if l["bytes"].(float64) <= 0 || l["client"] != "ip:127.0.0.1" {
				t.Errorf("stream line %v", l)
			}
			log.one(t, "access", map[string]any{"path": "/events", "code": "400"})
			if r := log.one(t, "request refused", map[string]any{"refusal": "request", "path": "/events"}); !strings.Contains(r["error"].(string), "snapshot") {
				t.Errorf("refusal line %v", r)
			}
		})
	}
}

// TestAccessLogAuth: with auth, a line names the token's subject and counts
// the client by it; a refusal for the token or its grants is logged at
// Debug with its reason.
func TestAccessLogAuth(t *testing.T) {
	k := authtest.NewKeys(t)
	cfg := ringtest.Config()
	cfg.AccessLog = true
	cfg.Auth, cfg.JWTKeyFile = app.AuthJWT, k.SecretFile
	log := logTo(&cfg)
	srv := ringtest.Start(t, cfg)
	tok := k.HS256(t, authtest.Claims("alice", []string{"a"}, []string{"a"}, time.Hour))
	ctx := context.Background()
	for _, p := range ringtest.Protocols {
		c := srv.Client(p)
		req := func(topic string, token bool) *connect.Request[ringcastv1.PublishRequest] {
			r := connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact(topic)}})
			if token {
				r.Header().Set("Authorization", "Bearer "+tok)
			}
			return r
		}
		if _, err := c.Publish(ctx, req("a/b", true)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if _, err := c.Publish(ctx, req("a/b", false)); connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Fatalf("%s without a token: %v", p, err)
		}
		if _, err := c.Publish(ctx, req("z", true)); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Fatalf("%s outside the grant: %v", p, err)
		}
	}
	srv.Stop()

	publish := ringcastv1connect.EventServicePublishProcedure
	for code, want := range map[string]map[string]any{
		"ok":                {"client": "sub:alice", "subject": "alice"},
		"unauthenticated":   {"client": "ip:127.0.0.1", "subject": nil},
		"permission_denied": {"client": "sub:alice", "subject": "alice"},
	} {
		lines := log.lines(t, "access", map[string]any{"procedure": publish, "code": code})
		if len(lines) != len(ringtest.Protocols) {
			t.Fatalf("%d %s lines, want one per protocol", len(lines), code)
		}
		for _, l := range lines {
			for k, v := range want {
				if l[k] != v {
					t.Errorf("%s line: %s=%v, want %v (%v)", code, k, l[k], v, l)
				}
			}
		}
	}
	if n := len(log.lines(t, "request refused", map[string]any{"refusal": "auth", "reason": "missing", "level": "DEBUG"})); n != len(ringtest.Protocols) {
		t.Errorf("%d debug lines for a missing token, want %d", n, len(ringtest.Protocols))
	}
	if n := len(log.lines(t, "request refused", map[string]any{"refusal": "auth", "reason": "forbidden", "client": "sub:alice", "level": "DEBUG"})); n != len(ringtest.Protocols) {
		t.Errorf("%d debug lines for a topic outside the grant, want %d", n, len(ringtest.Protocols))
	}
}

// TestLimitRefusalsAtDebug: a client over a limit is logged at Warn once a
// minute, and every other refusal at Debug.
func TestLimitRefusalsAtDebug(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.MaxStreamsPerClient = 1
	log := logTo(&cfg)
	srv := ringtest.Start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := srv.Client(ringcast.ProtocolConnect)
	held, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
	if err != nil || !held.Receive() {
		t.Fatalf("first stream: %v", err)
	}
	for range 3 {
		s, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
		if err == nil {
			for s.Receive() {
			}
			err = s.Err()
			s.Close()
		}
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("second stream: %v", err)
		}
	}
	held.Close()
	srv.Stop()
	if n := len(log.lines(t, "client over a limit; refusing (logged once a minute per client and limit)", map[string]any{"level": "WARN"})); n != 1 {
		t.Errorf("%d warnings, want 1", n)
	}
	if n := len(log.lines(t, "request refused", map[string]any{"refusal": "limit", "limit": "streams_per_client", "client": "ip:127.0.0.1", "level": "DEBUG"})); n != 2 {
		t.Errorf("%d debug lines, want 2", n)
	}
}
