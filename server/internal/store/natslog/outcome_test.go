package natslog_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestPublishOutcomeSurvivesRestart: on the embedded store a key's outcome
// is the same receipt before and after a restart of the server and its
// embedded NATS server, and so is that of a key retried as a duplicate;
// on memory a restart forgets every key and remembered_since moves to the
// new start. A commit the stream's limits discarded is not applied, with
// remembered_since after it, before and after the restart (JetStream
// forgets its key when it restarts).
func TestPublishOutcomeSurvivesRestart(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store string, cfg app.Config, p ringcast.Protocol) {
		cfg.Store.NATSMaxMsgs = 6
		srv := ringtest.Start(t, cfg)
		c := srv.Client(p)
		gone := rpcPublish(t, c, "gone", fact("g/a", "a", 0))
		for i := range 5 {
			rpcPublish(t, c, "", fact("g/a", "a", i+1))
		}
		r := rpcPublish(t, c, "kept", fact("g/a", "a", 1), fact("g/b", "b", 2))
		rpcPublish(t, c, "kept", fact("g/a", "a", 1), fact("g/b", "b", 2)) // a duplicate
		check := func(when string) {
			t.Helper()
			o := ringtest.Outcome(t, c, "kept")
			if !o.Applied || !proto.Equal(o.Receipt, r) {
				t.Fatalf("%s: outcome %v, want applied with %v", when, o, r)
			}
			if store == "memory" {
				return
			}
			if o := ringtest.Outcome(t, c, "gone"); o.Applied || !o.RememberedSince.AsTime().After(gone.EventTime.AsTime()) {
				t.Fatalf("%s: outcome of a discarded commit %v, want not applied, remembered since after %v", when, o, gone.EventTime.AsTime())
			}
		}
		check("before the restart")
		srv.Restart()
		c = srv.Client(p)
		if store == "memory" {
			o := ringtest.Outcome(t, c, "kept")
			if o.Applied || o.RememberedSince.AsTime().Before(r.EventTime.AsTime()) {
				t.Fatalf("memory after a restart: %v, want not applied, remembered since the new start", o)
			}
			return
		}
		check("after the restart")
	})
}
