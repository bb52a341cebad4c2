package app_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestIdempotencyKeysBelongToTheirPublisher: under --auth jwt, on the
// memory and the embedded store and every protocol, a key is its
// publisher's (the token's issuer and subject): tenant B's key does not
// make tenant A's publish with the same key a duplicate, nor the other
// way round; each gets its own receipt, its own retry's duplicate and its
// own outcome; the same subject under another issuer is another
// publisher; and a tenant asking about another's key is answered as for
// a key never published.
func TestIdempotencyKeysBelongToTheirPublisher(t *testing.T) {
	forEachAuthStore(t, 0, func(t *testing.T, k *authtest.Keys, srv *ringtest.Server, p ringcast.Protocol) {
		c := srv.Client(p)
		tenant := func(iss, sub, topic string) string {
			claims := authtest.Claims(sub, []string{topic}, []string{topic}, time.Hour)
			if iss != "" {
				claims["iss"] = iss
			}
			return k.HS256(t, claims)
		}
		tokA, tokB, tokA2 := tenant("", "a", "a"), tenant("", "b", "b"), tenant("other-issuer", "a", "a")
		pub := func(tok, key, topic string) *ringcastv1.PublishResponse {
			t.Helper()
			req := connect.NewRequest(&ringcastv1.PublishRequest{IdempotencyKey: key, Facts: []*ringcastv1.Fact{scopeFact(topic, "")}})
			authed(tok, req.Header())
			res, err := c.Publish(context.Background(), req)
			if err != nil {
				t.Fatalf("publish %s to %s: %v", key, topic, err)
			}
			return res.Msg
		}
		outcome := func(tok, key string) *ringcastv1.GetPublishOutcomeResponse {
			t.Helper()
			req := connect.NewRequest(&ringcastv1.GetPublishOutcomeRequest{IdempotencyKey: key})
			authed(tok, req.Header())
			res, err := c.GetPublishOutcome(context.Background(), req)
			if err != nil {
				t.Fatalf("outcome of %s: %v", key, err)
			}
			return res.Msg
		}
		rb := pub(tokB, "order-42", "b/payroll")
		ra := pub(tokA, "order-42", "a/x")
		ra2 := pub(tokA2, "order-42", "a/x")
		if rb.Duplicate || ra.Duplicate || ra2.Duplicate || ra.Seq == rb.Seq || ra2.Seq == ra.Seq || ra2.Seq == rb.Seq {
			t.Fatalf("B %v, A %v, A of another issuer %v: want three commits, no duplicate", rb, ra, ra2)
		}
		// A's guessable key first, B's after it: B's lands.
		ga := pub(tokA, "inv-7", "a/x")
		gb := pub(tokB, "inv-7", "b/payroll")
		if gb.Duplicate || gb.Seq == ga.Seq {
			t.Fatalf("B's inv-7 after A's: %v, want a commit of its own (A's: %v)", gb, ga)
		}
		for _, x := range []struct {
			tok, topic string
			r          *ringcastv1.PublishResponse
		}{{tokA, "a/x", ra}, {tokB, "b/payroll", rb}, {tokA2, "a/x", ra2}} {
			if dup := pub(x.tok, "order-42", x.topic); !dup.Duplicate || dup.Seq != x.r.Seq {
				t.Fatalf("retry: %v, want a duplicate of %v", dup, x.r)
			}
			want := proto.Clone(x.r).(*ringcastv1.PublishResponse)
			want.Duplicate = false
			if o := outcome(x.tok, "order-42"); !o.Applied || !proto.Equal(o.Receipt, want) {
				t.Fatalf("outcome %v, want applied with %v", o, want)
			}
		}
		if o := outcome(tokB, "inv-7"); !o.Applied || o.Receipt.GetSeq() != gb.Seq {
			t.Fatalf("B's outcome of inv-7: %v, want B's seq %d", o, gb.Seq)
		}
		// A key only another tenant used is unknown to the asker.
		pub(tokB, "only-b", "b/payroll")
		if o := outcome(tokA, "only-b"); o.Applied || o.Receipt != nil || o.RememberedSince == nil {
			t.Fatalf("A asking about B's key: %v, want the answer for an unknown key", o)
		}
	})
}

// forEachAuthStore runs f under --auth jwt (HS256 keys k) on the memory
// and the embedded store, once per protocol, in subtests named
// store/protocol; window, when set, is the server's ring window.
func forEachAuthStore(t *testing.T, window int, f func(t *testing.T, k *authtest.Keys, srv *ringtest.Server, p ringcast.Protocol)) {
	for _, store := range []string{app.StoreMemory, app.StoreEmbedded} {
		for _, p := range ringtest.Protocols {
			t.Run(store+"/"+string(p), func(t *testing.T) {
				k := authtest.NewKeys(t)
				cfg := ringtest.Config()
				cfg.Auth, cfg.JWTKeyFile = app.AuthJWT, k.SecretFile
				if window > 0 {
					cfg.Window = window
				}
				if store == app.StoreEmbedded { // its stream keeps commits after they left the ring
					cfg.Store = app.Store{Kind: app.StoreEmbedded, DataDir: t.TempDir()}
				}
				f(t, k, ringtest.Start(t, cfg), p)
			})
		}
	}
}
