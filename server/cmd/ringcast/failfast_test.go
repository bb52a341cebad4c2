package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// closedURL is the URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// notRingcast serves h on loopback (HTTP/1.1 and h2c) until the test ends.
func notRingcast(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.Protocols = new(http.Protocols)
	ts.Config.Protocols.SetHTTP1(true)
	ts.Config.Protocols.SetUnencryptedHTTP2(true)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestClientCommandsFailFast: when no ringcast answers — nothing listens,
// the URL has no scheme, or the server is something else (an HTML page, a
// 404) — every client command exits 1 at once with one line saying why,
// on every protocol, tail also with --count and --end-at-head.
func TestClientCommandsFailFast(t *testing.T) {
	html := notRingcast(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html>\n<html><body>\n<h1>Welcome</h1>\n</body></html>\n"))
	}))
	notFound := notRingcast(t, http.NotFoundHandler())
	closed := closedURL(t)
	targets := []struct {
		name, url, want string
	}{
		{"nothing listening", closed, "cannot reach a ringcast server at " + closed + ": "},
		{"no scheme", strings.TrimPrefix(closed, "http://"), `has no scheme: want a URL such as ` + closed},
		{"an HTML page", html, html + " answered, but not as a ringcast server speaking "},
		{"a 404", notFound, notFound + " answered, but not as a ringcast server speaking "},
	}
	commands := [][]string{
		{"tail"},
		{"tail", "--count", "1"},
		{"tail", "--end-at-head"},
		{"status"},
		{"outcome", "note-4"},
		{"publish", `{"topic":"a/b","type":"t"}`},
		{"publish", "--lines"},
	}
	for _, tg := range targets {
		for _, p := range ringtest.Protocols {
			for _, cmd := range commands {
				args := append([]string{cmd[0], "--server", tg.url, "--protocol", string(p)}, cmd[1:]...)
				t.Run(tg.name+"/"+string(p)+"/"+strings.Join(cmd, " "), func(t *testing.T) {
					var stdout, stderr bytes.Buffer
					code := run(args, strings.NewReader(`{"topic":"a/b","type":"t"}`+"\n"), &stdout, &stderr)
					checkOneLineFailure(t, cmd[0], code, stdout.String(), stderr.String(), tg.want)
				})
			}
		}
		t.Run(tg.name+"/load", func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"load", "--server", tg.url}, strings.NewReader(""), &stdout, &stderr)
			if tg.name == "no scheme" {
				// load's own check of --server, a usage error.
				if code != 2 || !strings.Contains(stderr.String(), "want a URL like http://127.0.0.1:8080") {
					t.Fatalf("exit %d, stderr %q", code, stderr.String())
				}
				return
			}
			checkOneLineFailure(t, "load", code, stdout.String(), stderr.String(), tg.want)
		})
	}
}

func checkOneLineFailure(t *testing.T, cmd string, code int, stdout, stderr, want string) {
	t.Helper()
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	if !strings.HasPrefix(stderr, "ringcast "+cmd+": ") || !strings.HasSuffix(stderr, "\n") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr %q: want one line beginning %q", stderr, "ringcast "+cmd+": ")
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q: want it to say %q", stderr, want)
	}
}

// unavailableFirst answers its first n requests 503 (unavailable, which a
// client retries), then hands them to next (nil: every request 503). Each
// request is counted on seen.
type unavailableFirst struct {
	n    int64
	next http.Handler
	seen chan struct{}
	reqs atomic.Int64
}

func (u *unavailableFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := u.reqs.Add(1); u.next == nil || n <= u.n {
		select {
		case u.seen <- struct{}{}:
		default:
		}
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	u.next.ServeHTTP(w, r)
}

// TestRetryKeepsTrying: with --retry, a command whose first requests get no
// ringcast answer keeps trying until it is interrupted (tail then exits 0,
// as on SIGINT; the others with the reason), and succeeds once a ringcast
// answers.
func TestRetryKeepsTrying(t *testing.T) {
	for _, cmd := range []string{"tail", "status", "outcome", "publish"} {
		t.Run(cmd+"/interrupted", func(t *testing.T) {
			u := &unavailableFirst{seen: make(chan struct{}, 100)}
			url := notRingcast(t, u)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stderr logbuf.Buffer
			done := make(chan error, 1)
			go func() { done <- runClientCmd(ctx, cmd, []string{"--server", url, "--retry"}, &stderr) }()
			for range 3 { // three attempts: it retried twice
				select {
				case <-u.seen:
				case err := <-done:
					t.Fatalf("returned before it was interrupted: %v; stderr %q", err, stderr.String())
				}
			}
			cancel()
			err := <-done
			if cmd == "tail" {
				if err != nil {
					t.Fatalf("tail interrupted: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), "answered, but not as a ringcast server") {
				t.Fatalf("%s interrupted: %v, want the reason", cmd, err)
			}
			// The first failure is said once, not once per attempt.
			if s := stderr.String(); strings.Count(s, "retrying (--retry)") != 1 || strings.Count(s, "\n") != 1 {
				t.Errorf("stderr %q: want one line saying it retries", s)
			}
		})
		t.Run(cmd+"/then answered", func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			u := &unavailableFirst{n: 2, next: srv.App().Handler, seen: make(chan struct{}, 100)}
			url := notRingcast(t, u)
			var stdout, stderr bytes.Buffer
			args := []string{cmd, "--server", url, "--retry"}
			switch cmd {
			case "tail":
				args = append(args, "--end-at-head")
			case "publish":
				args = append(args, `{"topic":"a/b","type":"t"}`)
			case "outcome":
				args = append(args, "note-4")
			}
			if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if stdout.Len() == 0 {
				t.Fatal("printed nothing")
			}
			if got := u.reqs.Load(); got < 3 {
				t.Errorf("%d requests, want at least 3 (two refused, then served)", got)
			}
		})
	}
}

// runClientCmd runs a client command in process with ctx, its stdout
// dropped.
func runClientCmd(ctx context.Context, cmd string, args []string, stderr *logbuf.Buffer) error {
	var out bytes.Buffer
	switch cmd {
	case "tail":
		return tailCmd(ctx, args, &out, stderr)
	case "status":
		return statusCmd(ctx, args, &out, stderr)
	case "outcome":
		return outcomeCmd(ctx, append(args, "note-4"), &out, stderr)
	case "publish":
		return publishCmd(ctx, append(args, `{"topic":"a/b","type":"t"}`), strings.NewReader(""), &out, stderr)
	}
	panic(cmd)
}
