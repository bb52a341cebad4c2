package goclient_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestSnapshotEvictedKeysSurfaceInCaughtUp: a LATEST_PER_KEY snapshot taken
// after the server's key table evicted keys says so in its KindCaughtUp
// item, on all three protocols; a complete one says 0.
func TestSnapshotEvictedKeysSurfaceInCaughtUp(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.StateKeys = 2
			srv := ringtest.Start(t, cfg)
			c := newClient(t, srv.URL, p)
			caughtUp := func() (keys []string, evicted uint64) {
				for _, it := range readAll(t, c.Subscribe(ringcast.WithSnapshot(ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY), ringcast.WithEndAtHead())) {
					switch it.Kind {
					case ringcast.KindFact:
						keys = append(keys, it.Fact.GetKey())
					case ringcast.KindCaughtUp:
						evicted = it.SnapshotEvictedKeys
					}
				}
				return keys, evicted
			}
			pub := func(keys ...string) {
				var facts []*ringcastv1.Fact
				for _, k := range keys {
					d, _ := structpb.NewStruct(map[string]any{"k": k})
					facts = append(facts, &ringcastv1.Fact{Topic: "a", Type: "t", Key: k, Payload: &ringcastv1.Fact_Data{Data: d}})
				}
				if _, err := srv.Hub().Publish(facts, ""); err != nil {
					t.Fatal(err)
				}
			}
			pub("k1", "k2")
			if keys, evicted := caughtUp(); len(keys) != 2 || evicted != 0 {
				t.Fatalf("complete snapshot: keys %v, evicted %d; want 2 keys and 0", keys, evicted)
			}
			pub("k3")
			if keys, evicted := caughtUp(); len(keys) != 2 || keys[1] != "k3" || evicted != 1 {
				t.Fatalf("after an eviction: keys %v, evicted %d; want [k2 k3] and 1", keys, evicted)
			}
		})
	}
}

// TestCommitWaitsTheRetryAfterOfAResourceExhaustedRefusal: when the
// server refuses a commit for its per-client publish rate
// (resource_exhausted with a Retry-After), the client's next attempt starts
// no sooner than Retry-After after that refusal arrived, even with a 1 ms
// backoff, and then succeeds; hammering at the backoff's pace would have
// spent both attempts inside the empty bucket.
//
// The rule is checked on the attempts themselves, as the client's HTTP
// transport sees them, not on how long the commit took: a commit that finds
// the allowance refilled (the machine paused for a second) is not refused at
// all, so each round first empties the bucket with single requests until
// one is refused, and rounds repeat until the commit under test was
// refused. With a burst of 1, two requests less than a second apart are
// enough for a refusal.
func TestCommitWaitsTheRetryAfterOfAResourceExhaustedRefusal(t *testing.T) {
	const rounds = 10 // each needs only two requests less than a second apart
	cfg := ringtest.Config()
	cfg.Edge.PublishRate = 1
	cfg.Edge.PublishBurst = 1
	srv := ringtest.Start(t, cfg)
	rec := &attemptRecorder{next: ringcast.NewHTTPClient(ringcast.ProtocolConnect).Transport}
	hc := &http.Client{Transport: rec}
	t.Cleanup(hc.CloseIdleConnections)
	c := newClient(t, srv.URL, ringcast.ProtocolConnect, ringcast.WithHTTPClient(hc), ringcast.WithBackoff(ringcast.Backoff{Min: time.Millisecond, Initial: time.Millisecond, Max: time.Millisecond}))
	drainer := newClient(t, srv.URL, ringcast.ProtocolConnect) // one bucket with c: the server tells clients apart by IP
	d, _ := structpb.NewStruct(map[string]any{"n": 1})
	facts := func() []*ringcastv1.Fact {
		return []*ringcastv1.Fact{{Topic: "a", Type: "t", Payload: &ringcastv1.Fact_Data{Data: d}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for round := 1; round <= rounds; round++ {
		emptyPublishBucket(ctx, t, drainer, facts)
		rec.reset()
		_, err := c.Commit(ctx, facts(), ringcast.WithAttempts(2))
		attempts := rec.take()
		if len(attempts) > 0 && attempts[0].retryAfter == 0 {
			if err != nil {
				t.Fatalf("commit: %v (attempts: %v)", err, attempts)
			}
			t.Logf("round %d: the allowance refilled before the commit (attempts: %v); emptying it again", round, attempts)
			continue
		}
		if len(attempts) != 2 {
			t.Fatalf("attempts %v (commit: %v), want a refused one and one retry", attempts, err)
		}
		refused, retry := attempts[0], attempts[1]
		// No tolerance: both instants are readings of Go's monotonic
		// clock, and a time.Timer never fires before its duration.
		if waited := retry.start.Sub(refused.answered); waited < refused.retryAfter {
			t.Fatalf("retried %v after a refusal with Retry-After %v", waited, refused.retryAfter)
		}
		if err != nil || retry.status != http.StatusOK {
			t.Fatalf("commit: %v, retry answered %d; want it to succeed once Retry-After has passed", err, retry.status)
		}
		return
	}
	t.Fatalf("no commit was refused in %d rounds", rounds)
}

// emptyPublishBucket publishes single requests (no retries) through c until
// the server refuses one for its publish rate. With a burst of 1 that takes
// two requests unless a second passes between them; it gives up after 10.
func emptyPublishBucket(ctx context.Context, t *testing.T, c *ringcast.Client, facts func() []*ringcastv1.Fact) {
	t.Helper()
	for range 10 {
		_, err := c.Publish(ctx, facts(), "")
		if connect.CodeOf(err) == connect.CodeResourceExhausted {
			return
		}
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	t.Fatal("10 publishes in a row were not refused by a publish rate of 1/s, burst 1")
}

// attempt is one request a client sent: when it started, when its response
// (headers) arrived, its HTTP status and the Retry-After it carried (0:
// none).
type attempt struct {
	path            string
	start, answered time.Time
	status          int
	retryAfter      time.Duration
}

func (a attempt) String() string {
	return fmt.Sprintf("%s %d Retry-After %v at +%v", a.path, a.status, a.retryAfter, a.answered.Sub(a.start))
}

// attemptRecorder is an http.RoundTripper that records every PublishBatch
// request through it (Commit's attempts), before passing it to next.
type attemptRecorder struct {
	next http.RoundTripper

	mu       sync.Mutex
	attempts []attempt
}

// RoundTrip records req's start, and the arrival, status and Retry-After
// of its response.
func (r *attemptRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/PublishBatch") {
		return r.next.RoundTrip(req)
	}
	a := attempt{path: req.URL.Path, start: time.Now()}
	resp, err := r.next.RoundTrip(req)
	a.answered = time.Now()
	if err == nil {
		a.status = resp.StatusCode
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil {
			a.retryAfter = time.Duration(secs) * time.Second
		}
	}
	r.mu.Lock()
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
	return resp, err
}

// reset forgets the attempts recorded so far.
func (r *attemptRecorder) reset() { _ = r.take() }

// take returns the attempts recorded since the last reset or take.
func (r *attemptRecorder) take() []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.attempts
	r.attempts = nil
	return a
}
