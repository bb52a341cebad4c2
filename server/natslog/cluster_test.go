package natslog_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/hub"
	"github.com/ringcast/ringcast/server/natslog"
)

// freePorts reserves n loopback ports (closed again before use).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// cluster starts three in-process nats-servers forming a JetStream cluster
// and returns them with a URL list reaching all three.
func cluster(t testing.TB) ([]*server.Server, string) {
	t.Helper()
	ports := freePorts(t, 3)
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	var servers []*server.Server
	var urls []string
	for i := range 3 {
		ns, err := natslog.StartServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoSigs:     true,
			NoLog:      true,
			Cluster:    server.ClusterOpts{Name: "ringcast-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:     routes,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		servers = append(servers, ns)
		urls = append(urls, ns.ClientURL())
	}
	return servers, strings.Join(urls, ",")
}

// TestLeaderKillDeliversEveryAcknowledgedCommitOnce: an R3 stream on three
// nats-servers; a publisher on replica A retries every failed publish with
// its key, a subscriber on replica B reads live; the stream's leader is
// shut down midway. Every acknowledged commit is delivered once, in seq
// order, and no key is appended twice.
func TestLeaderKillDeliversEveryAcknowledgedCommitOnce(t *testing.T) {
	servers, urls := cluster(t)
	connect := func() *nats.Conn {
		nc, err := natslog.Connect([]string{urls}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
	lb, err := natslog.Open(ctx, connect(), natslog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := newHub(t, la, 16), newHub(t, lb, 16)

	const total = 60
	rec := &syncRecorder{}
	subDone := make(chan error, 1)
	go func() { subDone <- b.Subscribe(ctx, hub.Request{UntilSeq: total}, rec) }()

	// Three publishers, so that publishes are in flight when the leader
	// goes; each retries a failed publish with its key.
	var mu sync.Mutex
	acked := map[string]hub.Receipt{}
	retries := 0
	killAt := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := w; i < total; i += 3 {
				key := fmt.Sprintf("k%03d", i)
				for attempt := 0; ; attempt++ {
					pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
					r, err := a.PublishContext(pctx, []*ringcastv1.Fact{fact("t", key, i)}, key)
					pcancel()
					if err == nil {
						mu.Lock()
						acked[key] = r
						if len(acked) == total/3 {
							once.Do(func() { close(killAt) })
						}
						mu.Unlock()
						break
					}
					mu.Lock()
					retries++
					mu.Unlock()
					if attempt > 40 || ctx.Err() != nil {
						t.Errorf("publish %s: %v after %d attempts", key, err, attempt)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	<-killAt
	leader := streamLeader(t, ctx, la)
	for _, ns := range servers {
		if ns.Name() == leader {
			ns.Shutdown()
		}
	}
	t.Logf("shut down the stream leader %s with publishes in flight", leader)
	wg.Wait()
	if t.Failed() {
		return
	}
	if err := <-subDone; err != nil {
		t.Fatalf("subscriber: %v", err)
	}
	t.Logf("%d commits acknowledged, %d publish attempts retried", len(acked), retries)
	seen := map[string]uint64{}
	var last uint64
	for _, m := range rec.all() {
		c := m.GetCommit()
		if c == nil {
			continue
		}
		if m.Seq <= last {
			t.Fatalf("commit %d after %d", m.Seq, last)
		}
		last = m.Seq
		for _, f := range c.Facts {
			if prev, dup := seen[f.Key]; dup {
				t.Fatalf("key %s appended twice: seqs %d and %d", f.Key, prev, m.Seq)
			}
			seen[f.Key] = m.Seq
		}
	}
	for key, r := range acked {
		if seen[key] != r.Seq {
			t.Fatalf("acknowledged %s at seq %d, delivered at %d", key, r.Seq, seen[key])
		}
	}
}

func streamLeader(t *testing.T, ctx context.Context, l *natslog.Log) string {
	t.Helper()
	info, err := l.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("stream leader: %v %+v", err, info)
	}
	return info.Cluster.Leader
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
