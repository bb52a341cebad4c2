package goclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/core/topic"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

const waitLong = 20 * time.Second

// fastBackoff keeps reconnect tests short; every wait is still > 0.
var fastBackoff = ringcast.Backoff{Min: 2 * time.Millisecond, Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond, Reset: time.Minute}

// newClient returns a client for url speaking p, closed with the test.
func newClient(t *testing.T, url string, p ringcast.Protocol, opts ...ringcast.Option) *ringcast.Client {
	t.Helper()
	c := ringcast.NewClient(url, append([]ringcast.Option{ringcast.WithProtocol(p), ringcast.WithBackoff(fastBackoff)}, opts...)...)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// want is one expected fact: its identity (the fact key) and whether it
// ends its commit for the subscription.
type want struct {
	seq  uint64
	key  string
	last bool
}

// ledger records what was published, to compute what a subscription must
// deliver.
type ledger struct {
	mu      sync.Mutex
	commits []ledgerCommit
	n       int
}

type ledgerCommit struct {
	seq    uint64
	topics []string
	keys   []string
}

// publish appends one commit of facts on the given topics to h and records
// it. Fact keys are unique across the ledger.
func (l *ledger) publish(t testing.TB, h *hub.Hub, topics ...string) uint64 {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	facts := make([]*ringcastv1.Fact, len(topics))
	keys := make([]string, len(topics))
	for i, tp := range topics {
		keys[i] = fmt.Sprintf("c%d-f%d", l.n, i)
		data, _ := structpb.NewStruct(map[string]any{"commit": l.n, "fact": i})
		facts[i] = &ringcastv1.Fact{Topic: tp, Type: "test.fact", Key: keys[i], Payload: &ringcastv1.Fact_Data{Data: data}}
	}
	r, err := h.Publish(facts, "")
	if err != nil {
		t.Errorf("publish: %v", err)
		return 0
	}
	l.commits = append(l.commits, ledgerCommit{seq: r.Seq, topics: topics, keys: keys})
	return r.Seq
}

// expect lists the facts a subscription filtered by filter (nil: all) must
// deliver for commits with seq > after, in order.
func (l *ledger) expect(after uint64, filter ...string) []want {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []want
	for _, c := range l.commits {
		if c.seq <= after {
			continue
		}
		start := len(out)
		for i, tp := range c.topics {
			if len(filter) == 0 || matches(filter, tp) {
				out = append(out, want{seq: c.seq, key: c.keys[i]})
			}
		}
		if len(out) > start {
			out[len(out)-1].last = true
		}
	}
	return out
}

func matches(filter []string, name string) bool {
	for _, f := range filter {
		if topic.Match(f, name) {
			return true
		}
	}
	return false
}

// got converts fact items to wants.
func got(items []ringcast.Item) []want {
	var out []want
	for _, it := range items {
		if it.Kind == ringcast.KindFact {
			out = append(out, want{seq: it.Seq, key: it.Fact.GetKey(), last: it.Last})
		}
	}
	return out
}

// checkExactlyOnce fails unless got equals want element by element, and
// reports the first duplicate or missing fact.
func checkExactlyOnce(t *testing.T, got, want []want) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range got {
		seen[g.key]++
		if seen[g.key] == 2 {
			t.Errorf("duplicate fact %s (seq %d)", g.key, g.seq)
		}
	}
	for _, w := range want {
		if seen[w.key] == 0 {
			t.Errorf("missing fact %s (seq %d)", w.key, w.seq)
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d facts, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fact %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// consumer ranges over a subscription on its own goroutine and hands each
// item over on a channel.
type consumer struct {
	sub    *ringcast.Subscription
	items  chan ringcast.Item
	done   chan error
	cancel context.CancelFunc
	once   sync.Once
	err    error
}

func consume(t *testing.T, sub *ringcast.Subscription) *consumer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{sub: sub, items: make(chan ringcast.Item, 1<<14), done: make(chan error, 1), cancel: cancel}
	go func() {
		var final error
		for it, err := range sub.Items(ctx) {
			if err != nil {
				final = err
				break
			}
			c.items <- it
		}
		c.done <- final
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop cancels the consumer and waits for its iteration to end.
func (c *consumer) stop(t *testing.T) error {
	t.Helper()
	c.once.Do(func() {
		c.cancel()
		c.err = ringtest.Wait(t, c.done, 10*time.Second, "the subscription to stop after cancel")
	})
	return c.err
}

// next waits for the next item.
func (c *consumer) next(t *testing.T) ringcast.Item {
	t.Helper()
	return ringtest.Wait(t, c.items, waitLong, "the next item")
}

// until collects items until one satisfies stop (included).
func (c *consumer) until(t *testing.T, stop func(ringcast.Item) bool) []ringcast.Item {
	t.Helper()
	var out []ringcast.Item
	for {
		it := c.next(t)
		out = append(out, it)
		if stop(it) {
			return out
		}
	}
}

func isCaughtUp(it ringcast.Item) bool { return it.Kind == ringcast.KindCaughtUp }

// collectFacts gathers n fact items, failing on any resync.
func (c *consumer) collectFacts(t *testing.T, n int) []ringcast.Item {
	t.Helper()
	var out []ringcast.Item
	for len(out) < n {
		it := c.next(t)
		switch it.Kind {
		case ringcast.KindFact:
			out = append(out, it)
		case ringcast.KindResynced:
			t.Fatalf("unexpected resync %+v after %d facts", it.Resync, len(out))
		}
	}
	return out
}

// fakeServer serves svc over HTTP/1.1 and h2c on loopback for the test.
func fakeServer(t *testing.T, svc ringcastv1connect.EventServiceHandler) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(ringcastv1connect.NewEventServiceHandler(svc))
	srv := httptest.NewUnstartedServer(mux)
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// pos is c less its fingerprint (the commit's, which tests do not
// predict): the position a test compares.
func pos(c ringcast.Cursor) ringcast.Cursor {
	c.Fingerprint = 0
	return c
}
