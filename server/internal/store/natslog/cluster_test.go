package natslog_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/bind"
	"github.com/ringcast/ringcast/server/internal/testkit/history"
)

// testCluster is three in-process nats-servers forming a JetStream
// cluster, each restartable on its ports and its store.
type testCluster struct {
	t       testing.TB
	opts    []func() *server.Options
	servers []*server.Server
	urls    string // every server's client URL, comma-separated
}

// cluster starts three in-process nats-servers forming a JetStream cluster
// and returns them with a URL list reaching all three.
func cluster(t testing.TB) ([]*server.Server, string) {
	c := newCluster(t)
	return c.servers, c.urls
}

// openOn opens the Log through a connection to one server of a cluster
// (cluster), retrying until the cluster has elected its meta leader:
// until then creating the stream fails.
func openOn(ctx context.Context, t testing.TB, s *server.Server, opts natslog.Options) *natslog.Log {
	t.Helper()
	nc, err := natslog.Connect([]string{s.ClientURL()}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	for {
		l, err := natslog.Open(ctx, nc, opts)
		if err == nil {
			return l
		}
		if ctx.Err() != nil {
			t.Fatalf("open R3 stream: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// newCluster starts three in-process nats-servers forming a JetStream
// cluster. Each binds a client port of its own; the route ports are
// reserved beforehand, as every server's routes name all three, and when
// one was taken meanwhile the cluster starts again on fresh ones.
func newCluster(t testing.TB) *testCluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := tryCluster(t)
		if err == nil {
			return c
		}
		if !bind.InUse(err) || attempt == 3 {
			t.Fatalf("start a 3-node cluster (attempt %d): %v", attempt, err)
		}
	}
}

// tryCluster starts the three servers on three reserved route ports; on
// an error it shuts down those it started.
func tryCluster(t testing.TB) (*testCluster, error) {
	var routePorts []int
	var routes []*url.URL
	var lns []net.Listener
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		p := ln.Addr().(*net.TCPAddr).Port
		routePorts = append(routePorts, p)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	for _, ln := range lns {
		ln.Close()
	}
	c := &testCluster{t: t}
	shutdown := func() {
		for _, ns := range c.servers {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	}
	var urls []string
	for i := range 3 {
		dir := t.TempDir()
		clientPort := -1 // its own, then the same on every restart
		opts := func() *server.Options {
			return &server.Options{
				ServerName: fmt.Sprintf("n%d", i+1),
				Host:       "127.0.0.1",
				Port:       clientPort,
				JetStream:  true,
				StoreDir:   dir,
				NoSigs:     true,
				NoLog:      true,
				Cluster:    server.ClusterOpts{Name: "ringcast-test", Host: "127.0.0.1", Port: routePorts[i]},
				Routes:     routes,
			}
		}
		ns, err := natslog.StartServer(opts())
		if err != nil {
			shutdown()
			return nil, err
		}
		clientPort = ns.Addr().(*net.TCPAddr).Port
		c.opts = append(c.opts, opts)
		c.servers = append(c.servers, ns)
		urls = append(urls, ns.ClientURL())
	}
	t.Cleanup(shutdown)
	c.urls = strings.Join(urls, ",")
	return c, nil
}

// start starts server i again on its ports and its store, after stop,
// waiting while a port of its is still in use.
func (c *testCluster) start(i int) {
	c.t.Helper()
	err := bind.Again(c.t, fmt.Sprintf("restart nats-server n%d", i+1), func() error {
		ns, err := natslog.StartServer(c.opts[i]())
		if err == nil {
			c.servers[i] = ns
		}
		return err
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

// stop shuts down the server named name and returns its index.
func (c *testCluster) stop(name string) int {
	c.t.Helper()
	for i, ns := range c.servers {
		if ns.Name() == name {
			ns.Shutdown()
			ns.WaitForShutdown()
			return i
		}
	}
	c.t.Fatalf("no server named %q", name)
	return -1
}

// TestStreamReplicaKilledAndRestarted: an R3 stream on three nats-servers;
// three publishers on ringcast replica A retry every failed publish with
// its key, and subscribers on replicas A and B read live. Midway one of
// the stream's servers — its leader, or one of its followers — is shut
// down with publishes in flight, and later started again on its store.
// Every publish gets a receipt or a retryable error (ErrUnavailable, the
// RPC's unavailable); a retried key is appended once; every subscriber is
// given every acknowledged commit exactly once, in order (the history
// checker); the server that came back catches up with the stream.
func TestStreamReplicaKilledAndRestarted(t *testing.T) {
	for _, victim := range []string{"leader", "follower"} {
		t.Run(victim, func(t *testing.T) { testReplicaKill(t, victim) })
	}
}

func testReplicaKill(t *testing.T, victim string) {
	c := newCluster(t)
	connect := func() *nats.Conn {
		nc, err := natslog.Connect([]string{c.urls}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var la *natslog.Log
	for {
		// The cluster elects its meta leader first; until then creating
		// the stream fails.
		l, err := natslog.Open(ctx, connect(), natslog.Options{Replicas: 3, Timeout: 2 * time.Second})
		if err == nil {
			la = l
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("open R3 stream: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	lb, err := natslog.Open(ctx, connect(), natslog.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const total = 90
	a, b := newHub(t, la, 2*total), newHub(t, lb, 2*total)
	epoch := a.Epoch()

	hist := history.New()
	subDone := make(chan error, 2)
	for name, h := range map[string]*hub.Hub{"on A": a, "on B": b} {
		sink := &historySink{c: hist.Consumer(name), epoch: epoch}
		go func() { subDone <- h.Subscribe(ctx, hub.Request{UntilSeq: total}, sink) }()
	}

	// Three publishers, so that publishes are in flight when the server
	// goes; each retries a failed publish with its key.
	var mu sync.Mutex
	acked := 0
	var retries, duplicates int
	phase := []chan struct{}{make(chan struct{}), make(chan struct{})} // kill, restart
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := w; i < total; i += 3 {
				key := fmt.Sprintf("k%03d", i)
				for attempt := 0; ; attempt++ {
					pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
					r, err := a.PublishCommit(pctx, hub.Commit{Facts: []*ringcastv1.Fact{fact("t", key, i), fact("t", key, -i)}, IdempotencyKey: key})
					pcancel()
					if err == nil {
						// Recorded once: a key is retried only after an
						// error, so no earlier receipt names it.
						hist.Published(r.Epoch, r.Seq, 2)
						mu.Lock()
						acked++
						if r.Duplicate {
							duplicates++
						}
						for p, n := range []int{total / 3, 2 * total / 3} {
							if acked == n {
								close(phase[p])
							}
						}
						mu.Unlock()
						break
					}
					if !errors.Is(err, hub.ErrUnavailable) {
						t.Errorf("publish %s: %v, want a receipt or ErrUnavailable", key, err)
						return
					}
					mu.Lock()
					retries++
					mu.Unlock()
					if attempt > 60 || ctx.Err() != nil {
						t.Errorf("publish %s: %v after %d attempts", key, err, attempt)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	published := make(chan struct{})
	go func() { wg.Wait(); close(published) }()
	// reached waits for a phase; publishers that gave up never reach it.
	reached := func(p chan struct{}) bool {
		select {
		case <-p:
			return true
		case <-published:
		case <-ctx.Done():
		}
		return false
	}
	if !reached(phase[0]) {
		wg.Wait()
		t.Fatal("the publishers stopped before a third of the commits")
	}
	info := streamInfo(t, ctx, la)
	name := info.Cluster.Leader
	if victim == "follower" {
		name = info.Cluster.Replicas[0].Name
	}
	down := c.stop(name)
	t.Logf("shut down the stream's %s %s with publishes in flight", victim, name)
	reached(phase[1])
	c.start(down)
	t.Logf("started %s again", name)
	wg.Wait()
	if t.Failed() {
		return
	}
	for range 2 {
		if err := <-subDone; err != nil {
			t.Fatalf("subscriber: %v", err)
		}
	}
	sum, err := hist.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v; %d publish attempts retried, %d answered as duplicates", sum, retries, duplicates)

	// The server that came back catches up: it is a current replica again.
	for {
		info := streamInfo(t, ctx, la)
		if info.State.LastSeq != total {
			t.Fatalf("stream holds %d commits, want %d: a key was appended twice", info.State.LastSeq, total)
		}
		if caughtUp(info, name) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never caught up: %+v", name, info.Cluster)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func caughtUp(info *jetstream.StreamInfo, name string) bool {
	if info.Cluster.Leader == name {
		return true
	}
	for _, p := range info.Cluster.Replicas {
		if p.Name == name {
			return p.Current && !p.Offline && p.Lag == 0
		}
	}
	return false
}

// streamInfo is the stream's information from its current leader,
// retried while the cluster elects one.
func streamInfo(t *testing.T, ctx context.Context, l *natslog.Log) *jetstream.StreamInfo {
	t.Helper()
	for {
		info, err := l.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" && len(info.Cluster.Replicas) == 2 {
			return info
		}
		if ctx.Err() != nil {
			t.Fatalf("stream info: %v %+v", err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// historySink records what a hub subscriber is given in a history.
type historySink struct {
	c     *history.Consumer
	epoch uint64
}

func (s *historySink) Send(m *ringcastv1.SubscribeEventsResponse) error {
	if c := m.GetCommit(); c != nil {
		for _, f := range c.Facts {
			s.c.Fact(s.epoch, m.Seq, f.Index)
		}
	}
	if rr := m.GetResyncRequired(); rr != nil {
		s.c.Resynced(s.epoch, rr.Reason.String(), rr.RequestedSeq, rr.OldestSeq, rr.HeadSeq)
	}
	return nil
}

// syncRecorder is a Sink safe to read while the stream runs.
type syncRecorder struct {
	mu   sync.Mutex
	msgs []*ringcastv1.SubscribeEventsResponse
}

func (r *syncRecorder) Send(m *ringcastv1.SubscribeEventsResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
	return nil
}

func (r *syncRecorder) all() []*ringcastv1.SubscribeEventsResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*ringcastv1.SubscribeEventsResponse(nil), r.msgs...)
}
