package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// authServer serves with --auth jwt, an RSA public key, and an issuer and
// audience to check.
func authServer(t *testing.T) (*ringtest.Server, *authtest.Keys) {
	t.Helper()
	return authServerWith(t, ringtest.Config())
}

// authServerWith serves cfg with JWT auth on.
func authServerWith(t *testing.T, cfg app.Config) (*ringtest.Server, *authtest.Keys) {
	t.Helper()
	k := authtest.NewKeys(t)
	cfg.Auth = app.AuthJWT
	cfg.JWTKeyFile = k.RSAFile
	cfg.JWTIssuer = "https://issuer.test"
	cfg.JWTAudience = "ringcast"
	return ringtest.Start(t, cfg), k
}

// tokenCase is one row of the matrix: the token sent, and the code each
// call gets (0: OK).
type tokenCase struct {
	name      string
	token     string
	publish   connect.Code
	subscribe connect.Code
	sse       int
}

func tokenCases(t *testing.T, k *authtest.Keys) []tokenCase {
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := authtest.Claims("alice", []string{"gauges/eden"}, []string{"gauges/eden", "alerts"}, time.Hour)
		c["iss"], c["aud"] = "https://issuer.test", "ringcast"
		if mod != nil {
			mod(c)
		}
		return c
	}
	good := k.RS256(t, claims(nil))
	parts := strings.Split(good, ".")
	badSig := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
	unauth := func(name, tok string) tokenCase {
		return tokenCase{name, tok, connect.CodeUnauthenticated, connect.CodeUnauthenticated, http.StatusUnauthorized}
	}
	return []tokenCase{
		unauth("no token", ""),
		unauth("garbage", "garbage"),
		unauth("bad signature", badSig),
		unauth("wrong issuer", k.RS256(t, claims(func(c jwt.MapClaims) { c["iss"] = "https://mallory.test" }))),
		unauth("wrong audience", k.RS256(t, claims(func(c jwt.MapClaims) { c["aud"] = "other" }))),
		unauth("expired", k.RS256(t, claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Minute).Unix() }))),
		unauth("not yet valid", k.RS256(t, claims(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(time.Hour).Unix() }))),
		unauth("alg none", authtest.None(t, claims(nil))),
		unauth("HMAC with the public key", authtest.Confused(t, k.RSAFile, claims(nil))),
		{"publish and subscribe out of scope", k.RS256(t, claims(func(c jwt.MapClaims) {
			c["ringcast"] = map[string]any{"publish": []string{"gauges/lune"}, "subscribe": []string{"gauges/lune"}}
		})), connect.CodePermissionDenied, connect.CodePermissionDenied, http.StatusForbidden},
		{"no grants", k.RS256(t, claims(func(c jwt.MapClaims) { delete(c, "ringcast") })), connect.CodePermissionDenied, connect.CodePermissionDenied, http.StatusForbidden},
		{"good", good, 0, 0, http.StatusOK},
	}
}

func authed(token string, h http.Header) {
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
}

func TestAuthEveryFaceEveryToken(t *testing.T) {
	srv, k := authServer(t)
	h := srv.Hub()
	cases := tokenCases(t, k)
	for _, p := range ringtest.Protocols {
		rpc := srv.Client(p)
		for _, c := range cases {
			t.Run(string(p)+"/"+c.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, before := h.Bounds()
				preq := connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{
					{Topic: "gauges/eden/g-1", Type: "t", Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{}}},
					{Topic: "gauges/eden/g-2", Type: "t", Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{}}},
				}})
				authed(c.token, preq.Header())
				_, err := rpc.Publish(ctx, preq)
				checkCode(t, "Publish", err, c.publish)
				_, after := h.Bounds()
				if want := before + map[bool]uint64{true: 1}[c.publish == 0]; after != want {
					t.Errorf("head %d after Publish, want %d", after, want)
				}

				sreq := connect.NewRequest(&ringcastv1.SubscribeEventsRequest{Topics: []string{"gauges/eden"}, EndAtHead: true})
				authed(c.token, sreq.Header())
				stream, err := rpc.SubscribeEvents(ctx, sreq)
				if err != nil {
					t.Fatal(err)
				}
				caughtUp := false
				for stream.Receive() {
					caughtUp = caughtUp || stream.Msg().GetCaughtUp() != nil
				}
				checkCode(t, "SubscribeEvents", stream.Err(), c.subscribe)
				stream.Close()
				if caughtUp != (c.subscribe == 0) {
					t.Errorf("stream reached CaughtUp: %v", caughtUp)
				}

				st, err := rpc.GetServerStatus(ctx, connect.NewRequest(&ringcastv1.GetServerStatusRequest{}))
				if err != nil || st.Msg.GetStatus().GetWindow() != 64 {
					t.Errorf("GetServerStatus without a token: %v %v", st, err)
				}
			})
		}
	}
	for _, c := range cases {
		t.Run("sse/"+c.name, func(t *testing.T) {
			for _, how := range []string{"header", "query", "cookie"} {
				if c.token == "" && how != "header" {
					continue
				}
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/events?topic=gauges/eden", nil)
				switch how {
				case "header":
					authed(c.token, req.Header)
				case "query":
					req.URL.RawQuery += "&access_token=" + url.QueryEscape(c.token)
				case "cookie":
					req.AddCookie(&http.Cookie{Name: "ringcast_token", Value: c.token})
				}
				ctx, cancel := context.WithCancel(context.Background())
				res, err := http.DefaultClient.Do(req.WithContext(ctx))
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				if res.StatusCode != c.sse {
					t.Errorf("%s: status %d, want %d", how, res.StatusCode, c.sse)
				}
				if c.sse == http.StatusUnauthorized && res.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s: 401 without WWW-Authenticate", how)
				}
				cancel()
				res.Body.Close()
			}
		})
	}
	metrics := ringtest.Scrape(t, srv.URL)
	for _, want := range []string{
		`ringcast_auth_rejections_total{face="connect",reason="missing"} 6`,
		`ringcast_auth_rejections_total{face="connect",reason="expired"} 6`,
		`ringcast_auth_rejections_total{face="connect",reason="forbidden"} 12`,
		`ringcast_auth_rejections_total{face="sse",reason="missing"} 1`,
		`ringcast_auth_rejections_total{face="sse",reason="expired"} 3`,
		`ringcast_auth_rejections_total{face="sse",reason="invalid"} 21`,
		`ringcast_auth_rejections_total{face="sse",reason="forbidden"} 6`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func checkCode(t *testing.T, what string, err error, want connect.Code) {
	t.Helper()
	if want == 0 {
		if err != nil {
			t.Errorf("%s: %v, want OK", what, err)
		}
		return
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != want {
		t.Errorf("%s: %v, want %v", what, err, want)
		return
	}
	if strings.ContainsAny(ce.Message(), "*{}") || strings.Contains(ce.Message(), "jwt") {
		t.Errorf("%s: message %q names internals", what, ce.Message())
	}
}

// TestAuthStreamEndsAtExpiry: a stream whose token expires ends with
// unauthenticated "token expired" (not OK, not a cut), after the commits
// before it. Each protocol gets its own token: a token is refused from the
// instant its first stream ended.
func TestAuthStreamEndsAtExpiry(t *testing.T) {
	srv, k := authServer(t)
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			c := authtest.Claims("alice", nil, []string{"*"}, 2*time.Second)
			c["iss"], c["aud"] = "https://issuer.test", "ringcast"
			tok := k.RS256(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			req := connect.NewRequest(&ringcastv1.SubscribeEventsRequest{})
			authed(tok, req.Header())
			stream, err := srv.Client(p).SubscribeEvents(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			n := 0
			for stream.Receive() {
				n++
			}
			var ce *connect.Error
			if !errors.As(stream.Err(), &ce) || ce.Code() != connect.CodeUnauthenticated || ce.Message() != "token expired" {
				t.Fatalf("stream ended with %v after %d messages; want unauthenticated: token expired", stream.Err(), n)
			}
			if n == 0 {
				t.Error("no messages before the end")
			}
		})
	}
}

// TestAuthSSEStreamEndsAtExpiry: an SSE stream whose token expires ends
// with the token-expired event, whether it waited on its goroutine or
// parked (--sse-park).
func TestAuthSSEStreamEndsAtExpiry(t *testing.T) {
	for _, park := range []bool{false, true} {
		t.Run(fmt.Sprintf("parked=%v", park), func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.ParkSSE = park
			srv, k := authServerWith(t, cfg)
			c := authtest.Claims("alice", nil, []string{"*"}, 2*time.Second)
			c["iss"], c["aud"] = "https://issuer.test", "ringcast"
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard only
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+k.RS256(t, c))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatalf("read to the end: %v", err)
			}
			body := string(b)
			if !strings.Contains(body, "event: caught-up\n") || !strings.HasSuffix(body, "event: token-expired\ndata: {}\n\n") {
				t.Fatalf("response %q: want caught-up, then token-expired at the end", body)
			}
		})
	}
}

// TestAuthClientCarriesToken: the Go client's WithToken reaches every face
// it uses.
func TestAuthClientCarriesToken(t *testing.T) {
	srv, k := authServer(t)
	c := authtest.Claims("alice", []string{"gauges"}, []string{"gauges"}, time.Hour)
	c["iss"], c["aud"] = "https://issuer.test", "ringcast"
	cl := ringcast.NewClient(srv.URL, ringcast.WithToken(k.RS256(t, c)), ringcast.WithHTTPClient(srv.HTTPClient(ringcast.ProtocolConnect)))
	if _, err := cl.Publish(context.Background(), []*ringcastv1.Fact{{Topic: "gauges/x", Type: "t", Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{}}}}, ""); err != nil {
		t.Fatal(err)
	}
}
