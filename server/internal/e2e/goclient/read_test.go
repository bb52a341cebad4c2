package goclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// Outcome reads a commit's original receipt by its key, and answers an
// unknown key with not applied; an empty key fails before any request.
func TestOutcome(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			c := newClient(t, srv.URL, p)
			ctx := context.Background()
			r, err := c.Commit(ctx, []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: "k"}}, ringcast.WithIdempotencyKey("order-17"))
			if err != nil {
				t.Fatal(err)
			}
			o, err := c.Outcome(ctx, "order-17")
			if err != nil {
				t.Fatal(err)
			}
			if !o.Applied || o.Receipt.GetSeq() != r.GetSeq() || o.Receipt.GetInstanceEpoch() != r.GetInstanceEpoch() ||
				!o.Receipt.GetEventTime().AsTime().Equal(r.GetEventTime().AsTime()) || o.Receipt.GetDuplicate() {
				t.Fatalf("outcome %+v, want applied with the original receipt %v", o, r)
			}
			if o.RememberedSince.IsZero() || o.RememberedSince.After(time.Now()) {
				t.Errorf("remembered since %v: want a time not later than now", o.RememberedSince)
			}
			o, err = c.Outcome(ctx, "never-sent")
			if err != nil {
				t.Fatal(err)
			}
			if o.Applied || o.Receipt != nil || o.RememberedSince.IsZero() {
				t.Fatalf("unknown key: %+v, want not applied with a remembered-since time", o)
			}
			if _, err := c.Outcome(ctx, ""); connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("empty key: %v, want invalid_argument", err)
			}
		})
	}
}

// WithSinceTime replays the commits whose event time is at or after the
// time, oldest first, instead of a snapshot.
func TestSubscribeSinceTime(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			var times []time.Time
			var seqs []uint64
			for range 5 {
				r, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "a/b", Type: "t"}}, "")
				if err != nil {
					t.Fatal(err)
				}
				times, seqs = append(times, r.Time), append(seqs, r.Seq)
			}
			at := times[2]
			var want []uint64
			for i, tm := range times {
				if !tm.Before(at) {
					want = append(want, seqs[i])
				}
			}
			c := newClient(t, srv.URL, p)
			items := readAll(t, c.Subscribe(ringcast.WithSinceTime(at), ringcast.WithEndAtHead()))
			var gotSeqs []uint64
			for _, it := range items {
				if it.Kind == ringcast.KindFact {
					gotSeqs = append(gotSeqs, it.Seq)
					if it.Time.Before(at) {
						t.Errorf("fact of seq %d at %v, before %v", it.Seq, it.Time, at)
					}
				}
			}
			if !slices.Equal(gotSeqs, want) {
				t.Fatalf("replayed seqs %v, want %v", gotSeqs, want)
			}
			if last := items[len(items)-1]; last.Kind != ringcast.KindCaughtUp {
				t.Fatalf("last item %v, want caught_up", last.Kind)
			}
		})
	}
}

// A time below the window: the server answers as for a cursor below it,
// and the subscription resyncs to a snapshot (never a partial replay).
func TestSubscribeSinceTimeBelowTheWindowResyncs(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.Window = 16
			srv := ringtest.Start(t, cfg)
			for range 40 {
				if _, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "a/b", Type: "t"}}, ""); err != nil {
					t.Fatal(err)
				}
			}
			oldest, head := srv.Hub().Bounds()
			c := newClient(t, srv.URL, p)
			items := readAll(t, c.Subscribe(ringcast.WithSinceTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), ringcast.WithEndAtHead()))
			if len(items) == 0 || items[0].Kind != ringcast.KindResynced || items[0].Resync.Reason != ringcastv1.Reason_REASON_CURSOR_TOO_OLD {
				t.Fatalf("first item %+v, want resynced cursor_too_old", items)
			}
			facts := got(items)
			if len(facts) == 0 || facts[0].seq != oldest || facts[len(facts)-1].seq != head {
				t.Fatalf("after the resync: facts %v, want the retained snapshot %d..%d", facts, oldest, head)
			}
		})
	}
}

// outcomeProxy forwards to target; the first PublishBatch reaches the
// server (and is appended) but its response is replaced by 503, as when a
// connection drops after the commit. It counts publishes and outcome reads.
func outcomeProxy(t *testing.T, target string) (proxyURL string, batches, outcomes *atomic.Int32) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	batches, outcomes = new(atomic.Int32), new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/GetPublishOutcome"):
			outcomes.Add(1)
		case strings.HasSuffix(r.URL.Path, "/PublishBatch") && batches.Add(1) == 1:
			proxy.ServeHTTP(httptest.NewRecorder(), r) // appended; the receipt is lost
			http.Error(w, "connection lost", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, batches, outcomes
}

// WithOutcomeCheck: after the lost receipt Commit reads the outcome, finds
// the commit applied and returns its original receipt without publishing
// again — one commit in the ring, one publish request.
func TestCommitOutcomeCheckAfterALostReceipt(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	pu, batches, outcomes := outcomeProxy(t, srv.URL)
	c := newClient(t, pu, ringcast.ProtocolConnect)
	_, before := srv.Hub().Bounds()
	r, err := c.Commit(context.Background(), []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: "k"}}, ringcast.WithOutcomeCheck())
	if err != nil {
		t.Fatal(err)
	}
	_, after := srv.Hub().Bounds()
	if after != before+1 || r.GetSeq() != after || !r.GetDuplicate() || batches.Load() != 1 || outcomes.Load() != 1 {
		t.Fatalf("receipt %v, head %d→%d, %d publishes, %d outcome reads: want seq %d as a duplicate after 1 publish and 1 read", r, before, after, batches.Load(), outcomes.Load(), before+1)
	}
	if r.GetEventTime() == nil || r.GetInstanceEpoch() != srv.Hub().Epoch() {
		t.Fatalf("receipt %v: want the original event time and epoch", r)
	}
}

// Under --auth jwt the outcome read carries the client's token: a token
// that may subscribe to the commit's topic gets the receipt; one scoped
// elsewhere gets the answer for an unknown key; none is unauthenticated.
func TestOutcomeUnderAuth(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv, k := authServer(t)
			ctx := context.Background()
			writer := newClient(t, srv.URL, p, ringcast.WithToken(k.HS256(t, authtest.Claims("w", []string{"gauges"}, []string{"gauges"}, time.Hour))))
			r, err := writer.Commit(ctx, []*ringcastv1.Fact{{Topic: "gauges/a", Type: "t"}}, ringcast.WithIdempotencyKey("g-1"))
			if err != nil {
				t.Fatal(err)
			}
			if o, err := writer.Outcome(ctx, "g-1"); err != nil || !o.Applied || o.Receipt.GetSeq() != r.GetSeq() {
				t.Fatalf("a reader of gauges: %+v, %v; want applied at seq %d", o, err, r.GetSeq())
			}
			other := newClient(t, srv.URL, p, ringcast.WithToken(k.HS256(t, authtest.Claims("o", nil, []string{"other"}, time.Hour))))
			if o, err := other.Outcome(ctx, "g-1"); err != nil || o.Applied || o.Receipt != nil {
				t.Fatalf("a reader of other topics: %+v, %v; want not applied, no receipt", o, err)
			}
			anon := newClient(t, srv.URL, p)
			if _, err := anon.Outcome(ctx, "g-1"); connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Fatalf("no token: %v, want unauthenticated", err)
			}
		})
	}
}
