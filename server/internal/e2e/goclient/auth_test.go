package goclient_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func authServer(t *testing.T) (*ringtest.Server, *authtest.Keys) {
	t.Helper()
	k := authtest.NewKeys(t)
	cfg := ringtest.Config()
	cfg.Auth, cfg.JWTKeyFile = app.AuthJWT, k.SecretFile
	return ringtest.Start(t, cfg), k
}

// TestTokenSourceResumesAcrossExpiry: tokens that expire every ~2s end the
// stream with "token expired"; the subscription asks its source for a new
// token and resumes from its cursor: every fact once, in order, and the
// source called again for each reconnect.
func TestTokenSourceResumesAcrossExpiry(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv, k := authServer(t)
			var calls atomic.Int32
			src := func(context.Context) (string, error) {
				calls.Add(1)
				return k.HS256(t, authtest.Claims("reader", nil, []string{"gauges"}, 2*time.Second)), nil
			}
			c := newClient(t, srv.URL, p, ringcast.WithTokenSource(src))
			var l ledger
			h := srv.Hub()
			l.publish(t, h, "gauges/a", "other/x", "gauges/b")
			cons := consume(t, c.Subscribe())
			first := cons.collectFacts(t, 2)
			// Publish across at least two expiries: wait for each
			// reconnect (a new token) before publishing the next commit.
			for range 2 {
				for n := calls.Load(); calls.Load() == n; {
					time.Sleep(20 * time.Millisecond)
				}
				l.publish(t, h, "gauges/c", "other/y")
				l.publish(t, h, "other/z")
				l.publish(t, h, "gauges/d")
			}
			rest := cons.collectFacts(t, 4)
			checkExactlyOnce(t, got(append(first, rest...)), l.expect(0, "gauges"))
			if n := calls.Load(); n < 3 {
				t.Errorf("token source called %d times, want at least 3 (open and two expiries)", n)
			}
		})
	}
}

// TestTokenRefusalsArePermanent: a token without the grant, a source that
// fails, and a source whose fresh token is expired already each end the
// iteration with the error, without a retry loop.
func TestTokenRefusalsArePermanent(t *testing.T) {
	srv, k := authServer(t)
	for _, c := range []struct {
		name  string
		tok   func() (string, error)
		code  connect.Code
		calls int32
	}{
		{"out of scope", func() (string, error) {
			return k.HS256(t, authtest.Claims("r", nil, []string{"gauges"}, time.Hour)), nil
		}, connect.CodePermissionDenied, 1},
		{"source fails", func() (string, error) { return "", errors.New("identity provider down") }, connect.CodeUnauthenticated, 1},
		{"expired", func() (string, error) {
			return k.HS256(t, authtest.Claims("r", nil, []string{"*"}, -time.Minute)), nil
		}, connect.CodeUnauthenticated, 2},
		{"bad signature", func() (string, error) {
			return k.HS256(t, authtest.Claims("r", nil, []string{"*"}, time.Hour)) + "x", nil
		}, connect.CodeUnauthenticated, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			cl := newClient(t, srv.URL, ringcast.ProtocolConnect, ringcast.WithTokenSource(func(context.Context) (string, error) {
				calls.Add(1)
				return c.tok()
			}))
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			var final error
			for _, err := range cl.Subscribe(ringcast.WithTopics("other")).Items(ctx) {
				if err != nil {
					final = err
					break
				}
			}
			if connect.CodeOf(final) != c.code || ctx.Err() != nil {
				t.Fatalf("ended with %v, want %v", final, c.code)
			}
			if n := calls.Load(); n != c.calls {
				t.Errorf("token source called %d times, want %d", n, c.calls)
			}
		})
	}
}

// TestExpiringTokenNeverLoops: a token past its exp but inside the
// server's leeway is served until the server would refuse it; then the
// subscription reconnects once at once, the same token is refused, and the
// iteration ends with unauthenticated. The number of streams is bounded by
// the reconnect rule (never two reconnects at once in a row), whatever
// the time it takes.
func TestExpiringTokenNeverLoops(t *testing.T) {
	srv, k := authServer(t)
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			tok := k.HS256(t, authtest.Claims("reader", nil, []string{"*"}, -time.Second))
			c := newClient(t, srv.URL, p, ringcast.WithToken(tok))
			var streams int
			var reconnects []bool // true: after a backoff, false: at once
			waited := false
			sub := c.Subscribe(ringcast.WithConnectionEvents(func(ev ringcast.ConnectionEvent) {
				switch ev.State {
				case ringcast.StateReconnecting:
					waited = true
				case ringcast.StateConnecting:
					if streams++; streams == 1 {
						return
					}
					if !waited && len(reconnects) > 0 && !reconnects[len(reconnects)-1] {
						t.Errorf("two reconnects at once in a row (reconnects so far %v)", reconnects)
					}
					reconnects = append(reconnects, waited)
					waited = false
				}
			}))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard only
			defer cancel()
			var final error
			for _, err := range sub.Items(ctx) {
				if err != nil {
					final = err
					break
				}
			}
			if ctx.Err() != nil || !ringcast.TokenExpired(final) {
				t.Fatalf("ended with %v after %d streams, want unauthenticated: token expired", final, streams)
			}
			if streams != 2 {
				t.Errorf("%d streams (reconnects %v), want 2: the one served until the token was refused, and one refused at once", streams, reconnects)
			}
		})
	}
}
