package ringtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// Store is a store the contract suites run on (docs/scaling.md, "Which
// suite runs on which store"). A test takes it from ForEachStore and
// starts its servers with Start.
type Store struct {
	// Name names the store's subtests: "memory" or "jetstream", so that
	// `go test -run '/jetstream'` picks one store.
	Name string
	// Durable is true for the JetStream store, whose differences the
	// contract documents (docs/protocol.md, "Stores"): only commits are
	// positioned (seq 1 is the first commit; ServerStatus has seq 0), the
	// epoch is the stream's and survives a restart, and the servable range
	// is the stream's.
	Durable bool

	// retain, when > 0, is how many commits a durable store's stream
	// keeps instead of the window (see Retaining).
	retain int64
	use    func(t testing.TB, st Store, cfg app.Config) app.Config
}

// Retaining returns the store with a durable stream that keeps n commits
// instead of the server's window, for a test whose row needs positions
// older than the ring to stay readable. Memory is unchanged: its ring is
// its log.
func (st Store) Retaining(n int64) Store {
	st.retain = n
	return st
}

// Adjusting returns st with adjust applied to every config it serves
// (e.g. an option a suite runs both ways).
func (st Store) Adjusting(adjust func(*app.Config)) Store {
	use := st.use
	st.use = func(t testing.TB, s Store, cfg app.Config) app.Config {
		adjust(&cfg)
		return use(t, s, cfg)
	}
	return st
}

// FirstCommit is the seq of a fresh server's first commit: 2 on memory,
// whose bind ServerStatus takes seq 1, and 1 on a durable store.
func (st Store) FirstCommit() uint64 {
	if st.Durable {
		return 1
	}
	return 2
}

// Memory is the default store: the ring is the log.
var Memory = Store{Name: app.StoreMemory, use: func(_ testing.TB, _ Store, cfg app.Config) app.Config { return cfg }}

// JetStream is a durable store on a fresh JetStream stream of the
// package's shared in-process nats-server (see Main), retaining as many
// commits as the server's window (MaxMsgs = Window), so that what leaves
// the ring also leaves the stream, as it leaves the memory store.
var JetStream = Store{Name: "jetstream", Durable: true, use: useJetStream}

// Embedded is a durable store on an embedded nats-server of its own (the
// server's --store embedded), its JetStream files in a directory of the
// test's: a Restart of its server keeps them, hence its epoch and seqs. Its
// stream has the default limits (Retaining does not apply).
var Embedded = Store{Name: app.StoreEmbedded, Durable: true, use: func(t testing.TB, _ Store, cfg app.Config) app.Config {
	cfg.Store = app.Store{Kind: app.StoreEmbedded, DataDir: t.TempDir()}
	return cfg
}}

// Stores are the stores every contract test runs on.
var Stores = []Store{Memory, JetStream}

// ForEachStore runs f in one subtest per store, named by the store.
func ForEachStore(t *testing.T, f func(t *testing.T, st Store)) {
	t.Helper()
	for _, st := range Stores {
		t.Run(st.Name, func(t *testing.T) { f(t, st) })
	}
}

// Config is the store's form of cfg, as Start serves it: for JetStream, a
// new stream (deleted when the test ends) with cfg.Window as its MaxMsgs
// (unless Retaining says otherwise).
// Each call makes another stream; call it once per server.
func (st Store) Config(t testing.TB, cfg app.Config) app.Config {
	t.Helper()
	return st.use(t, st, cfg)
}

// Start serves cfg on the store until the test ends (see Start). A
// Restart of the returned server keeps the store: on JetStream the same
// stream, hence the same epoch and seqs.
func (st Store) Start(t testing.TB, cfg app.Config) *Server {
	t.Helper()
	return Start(t, st.Config(t, cfg))
}

// shared is the package's one in-process nats-server, started by the first
// JetStream test and stopped by Main.
var shared struct {
	once sync.Once
	ns   *server.Server
	dir  string
	err  error
	n    atomic.Int64
}

func sharedServer() (*server.Server, error) {
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "ringtest-jetstream-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		shared.ns, shared.err = natslog.StartServer(natslog.EmbeddedOptions(dir))
	})
	return shared.ns, shared.err
}

func useJetStream(t testing.TB, st Store, cfg app.Config) app.Config {
	t.Helper()
	name := newStream(t)
	return st.jetStreamConfig(t, cfg, name)
}

// newStream names a stream for the test and deletes it when the test ends,
// after the servers on it stopped (cleanups run last first, and this one
// is registered before them). Open creates the stream.
func newStream(t testing.TB) string {
	t.Helper()
	nc := connectShared(t)
	name := fmt.Sprintf("t%d", shared.n.Add(1))
	t.Cleanup(func() {
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Errorf("delete stream %s: %v", name, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v", name, err)
		}
	})
	return name
}

// jetStreamConfig is cfg on the stream name, through a connection of its
// own that closes when the test ends.
func (st Store) jetStreamConfig(t testing.TB, cfg app.Config, name string) app.Config {
	t.Helper()
	nc := connectShared(t)
	t.Cleanup(nc.Close)
	keep := int64(cfg.Window)
	if st.retain > 0 {
		keep = st.retain
	}
	cfg.Store = app.Store{Kind: app.StoreJetStream, NATSConn: nc, NATSStream: name, NATSMaxMsgs: keep}
	return cfg
}

func connectShared(t testing.TB) *nats.Conn {
	t.Helper()
	ns, err := sharedServer()
	if err != nil {
		t.Fatalf("shared nats-server: %v", err)
	}
	nc, err := natslog.ConnectEmbedded(ns)
	if err != nil {
		t.Fatalf("connect to the shared nats-server: %v", err)
	}
	return nc
}

// StartReplicas starts n servers on one JetStream stream, as replicas
// behind a load balancer are: they share the epoch and the seqs, and a
// commit published through any of them reaches all. Only a durable store
// has replicas; on memory it fails the test.
func (st Store) StartReplicas(t testing.TB, cfg app.Config, n int) []*Server {
	t.Helper()
	if !st.Durable {
		t.Fatalf("store %s has no replicas: one process holds the log", st.Name)
	}
	name := newStream(t)
	var servers []*Server
	for range n {
		servers = append(servers, Start(t, st.jetStreamConfig(t, cfg, name)))
	}
	return servers
}

// TestingM is what goleak.VerifyTestMain runs.
type TestingM interface{ Run() int }

// Main wraps a package's m so that the shared nats-server stops once its
// tests ran, before a leak check looks for goroutines:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(ringtest.Main(m)) }
func Main(m TestingM) TestingM { return mainM{m} }

type mainM struct{ m TestingM }

func (w mainM) Run() int {
	code := w.m.Run()
	if shared.ns != nil {
		shared.ns.Shutdown()
		shared.ns.WaitForShutdown()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}
