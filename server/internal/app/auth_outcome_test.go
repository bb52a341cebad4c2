package app_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestPublishOutcomeIsScopedToTheSubscribeGrant: under --auth jwt, on every
// store and protocol, GetPublishOutcome needs a token (unauthenticated
// without one, also by GET); a token of the publisher (the same issuer
// and subject: the key's space) allowed to subscribe to only some of the
// commit's topics gets exactly the answer for an unknown key, never the
// receipt, even once the commit left the ring; one allowed every topic of
// it (by name or "*") gets the receipt.
func TestPublishOutcomeIsScopedToTheSubscribeGrant(t *testing.T) {
	forEachAuthStore(t, 4, func(t *testing.T, k *authtest.Keys, srv *ringtest.Server, p ringcast.Protocol) {
		c := srv.Client(p)
		token := func(subscribe ...string) string {
			return k.HS256(t, authtest.Claims("writer", nil, subscribe, time.Hour))
		}
		writer := k.HS256(t, authtest.Claims("writer", []string{"*"}, nil, time.Hour))
		req := connect.NewRequest(&ringcastv1.PublishRequest{IdempotencyKey: "k", Facts: []*ringcastv1.Fact{
			scopeFact("gauges/eden/g-1", "a"), scopeFact("alerts/flood", "b"),
		}})
		authed(writer, req.Header())
		res, err := c.Publish(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		r := res.Msg
		for i := range 6 { // the commit leaves the ring (not the stream)
			req := connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{scopeFact("other/x", "x")}})
			authed(writer, req.Header())
			if _, err := c.Publish(context.Background(), req); err != nil {
				t.Fatal(i, err)
			}
		}
		ask := func(tok, key string) (*ringcastv1.GetPublishOutcomeResponse, error) {
			req := connect.NewRequest(&ringcastv1.GetPublishOutcomeRequest{IdempotencyKey: key})
			authed(tok, req.Header())
			res, err := c.GetPublishOutcome(context.Background(), req)
			if err != nil {
				return nil, err
			}
			return res.Msg, nil
		}
		if _, err := ask("", "k"); connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Fatalf("no token: %v, want unauthenticated", err)
		}
		for _, grant := range [][]string{{"*"}, {"gauges/eden", "alerts"}, {"gauges", "alerts/flood"}} {
			o, err := ask(token(grant...), "k")
			if err != nil || !o.Applied || !proto.Equal(o.Receipt, r) {
				t.Fatalf("grant %v: %v, %v, want applied with %v", grant, o, err, r)
			}
		}
		for _, grant := range [][]string{{"gauges/eden"}, {"alerts"}, {"gauges/eden/g-2", "alerts"}, {"other"}} {
			tok := token(grant...)
			before := time.Now()
			o, err := ask(tok, "k")
			unknown, uerr := ask(tok, "never-published")
			after := time.Now()
			if err != nil || uerr != nil {
				t.Fatalf("grant %v: %v, %v", grant, err, uerr)
			}
			// The answer for an unknown key, as another key unknown gets it.
			window := srv.Hub().Status().GetLimits().GetDedupeWindow().AsDuration()
			for _, x := range []*ringcastv1.GetPublishOutcomeResponse{o, unknown} {
				since := x.GetRememberedSince().AsTime()
				if x.Applied || x.Receipt != nil || x.RememberedSince == nil || since.After(after) || since.Before(before.Add(-window)) {
					t.Fatalf("grant %v: %v (unknown key: %v), want the answer for an unknown key", grant, o, unknown)
				}
			}
		}
		if p == ringtest.Protocols[0] {
			q := url.Values{"encoding": {"json"}, "message": {`{"idempotencyKey":"k"}`}}
			res, err := http.Get(srv.URL + ringcastv1connect.EventServiceGetPublishOutcomeProcedure + "?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("GET without a token: %s, want 401", res.Status)
			}
		}
	})
}
