package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// inLeewayToken is a token whose exp passed a second ago, inside the
// verifier's leeway, and the instant from which the server refuses it.
func inLeewayToken(t *testing.T, k *authtest.Keys) (string, time.Time) {
	exp := time.Now().Add(-time.Second).Unix()
	c := authtest.Claims("alice", nil, []string{"*"}, time.Hour)
	c["iss"], c["aud"], c["exp"] = "https://issuer.test", "ringcast", exp
	return k.RS256(t, c), time.Unix(exp, 0).Add(auth.Leeway)
}

func publishSome(t *testing.T, srv *ringtest.Server) {
	t.Helper()
	for i := range 3 {
		d, _ := structpb.NewStruct(map[string]any{"n": float64(i)})
		if _, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "gauges/eden", Type: "t", Payload: &ringcastv1.Fact_Data{Data: d}}}, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuthStreamLastsUntilTokenRefused: a token past its exp but inside
// the leeway is valid until exp + leeway, once: a stream opened with it
// either is refused outright, or is served (the replay, then live) until
// that instant and ends there with unauthenticated "token expired" — never
// a replay cut off at once. Either way the end comes no earlier than the
// instant the server would refuse the same token.
func TestAuthStreamLastsUntilTokenRefused(t *testing.T) {
	srv, k := authServer(t)
	publishSome(t, srv)
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			tok, deadline := inLeewayToken(t, k)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard only
			defer cancel()
			req := connect.NewRequest(&ringcastv1.SubscribeEventsRequest{})
			authed(tok, req.Header())
			n := 0
			stream, err := srv.Client(p).SubscribeEvents(ctx, req)
			if err == nil {
				defer stream.Close()
				for stream.Receive() {
					n++
				}
				err = stream.Err()
			}
			end := time.Now()
			var ce *connect.Error
			if !errors.As(err, &ce) || ce.Code() != connect.CodeUnauthenticated || ce.Message() != names.TokenExpired {
				t.Fatalf("stream ended with %v after %d messages; want unauthenticated: token expired", err, n)
			}
			if end.Before(deadline) {
				t.Fatalf("stream ended %v before the token's refusal instant, after %d messages: a token valid at the start must be served until then", deadline.Sub(end), n)
			}
		})
	}
}

// TestAuthSSELastsUntilTokenRefused: the same on GET /events, on a stream
// that waits on its goroutine and on a parked one (--sse-park): refused
// with 401, or served until the refusal instant and ended there with the
// token-expired event.
func TestAuthSSELastsUntilTokenRefused(t *testing.T) {
	for _, park := range []bool{false, true} {
		t.Run(fmt.Sprintf("parked=%v", park), func(t *testing.T) {
			t.Parallel()
			cfg := ringtest.Config()
			cfg.ParkSSE = park
			srv, k := authServerWith(t, cfg)
			publishSome(t, srv)
			tok, deadline := inLeewayToken(t, k)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard only
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatalf("read to the end: %v", err)
			}
			end := time.Now()
			body := string(b)
			switch {
			case res.StatusCode == http.StatusUnauthorized && strings.Contains(body, names.TokenExpired):
			case res.StatusCode == http.StatusOK && strings.HasSuffix(body, "event: token-expired\ndata: {}\n\n"):
			default:
				t.Fatalf("status %d, response %q: want 401 token expired, or a stream ending with token-expired", res.StatusCode, body)
			}
			if end.Before(deadline) {
				t.Fatalf("stream ended %v before the token's refusal instant (status %d, %q)", deadline.Sub(end), res.StatusCode, body)
			}
		})
	}
}
