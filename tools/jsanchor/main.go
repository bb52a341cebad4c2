// Command jsanchor measures native NATS JetStream from publish to consume,
// with no ringcast and no HTTP in between: the ceiling ringcast's durable
// store is held against (docs/performance.md, "R3 cluster").
//
// It starts the nats-servers in its own process on loopback (JetStream
// file storage in temporary directories, removed at the end): one server
// for -replicas 1, or three forming a JetStream cluster for -replicas 3.
// It creates one stream of that many replicas, publishes to it from one
// connection to the stream's leader at a fixed offered rate, and consumes
// it with one ordered consumer (the kind a ringcast replica follows the
// stream with). Every message carries when it was published and its
// index, so the consumer times each one and counts the lost, duplicated
// and reordered. It prints one JSON object.
//
//	go run ./tools/jsanchor -replicas 3 -rate 2000 -duration 20s
//	go run ./tools/jsanchor -replicas 1 -rate 2000 -duration 10s   # the single-server anchor
//
// Flags:
//
//	-replicas N      1 (one server) or 3 (a three-server cluster, an R3 stream); default 3
//	-rate R          messages offered per second, paced from the start (default 2000)
//	-duration D      how long to publish (default 20s); R × D messages
//	-size B          payload bytes, at least 16 (default 100)
//	-async           publish without waiting for each acknowledgement (at most -inflight
//	                 unacknowledged); by default each publish waits for its acknowledgement
//	-inflight N      -async: acknowledgements outstanding at most (default 256)
//	-consume-from S  leader or follower: the server the consumer's connection is on (default
//	                 leader; follower needs -replicas 3)
//	-drain D         how long to wait, after the last publish, for the consumer (default 10s)
//
// The servers, the publisher and the consumer share the process and its
// CPUs: its CPU per message is all of theirs.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/tools/internal/benchkit"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "jsanchor:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	replicas    int
	rate        int
	duration    time.Duration
	size        int
	async       bool
	inflight    int
	consumeFrom string
	drain       time.Duration
}

// messages is how many messages the run publishes.
func (c config) messages() int {
	return int(math.Round(float64(c.rate) * c.duration.Seconds()))
}

// headerBytes is the payload's head: when it was published (Unix
// nanoseconds) and its index.
const headerBytes = 16

// flags is the command line's flag set, writing into c.
func flags(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("jsanchor", flag.ContinueOnError)
	fs.IntVar(&c.replicas, "replicas", 3, "1 (one server) or 3 (a three-server JetStream cluster, an R3 stream)")
	fs.IntVar(&c.rate, "rate", 2000, "messages offered per second")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "how long to publish")
	fs.IntVar(&c.size, "size", 100, "payload bytes (at least 16)")
	fs.BoolVar(&c.async, "async", false, "publish without waiting for each acknowledgement")
	fs.IntVar(&c.inflight, "inflight", 256, "-async: acknowledgements outstanding at most")
	fs.StringVar(&c.consumeFrom, "consume-from", "leader", "leader or follower: the server the consumer is connected to")
	fs.DurationVar(&c.drain, "drain", 10*time.Second, "how long to wait for the consumer after the last publish")
	return fs
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	if err := benchkit.ParseFlags(flags(&c), args, stderr); err != nil {
		return c, err
	}
	switch {
	case c.replicas != 1 && c.replicas != 3:
		return c, fmt.Errorf("-replicas must be 1 or 3, not %d", c.replicas)
	case c.rate < 1 || c.rate > 1_000_000:
		return c, fmt.Errorf("-rate must be 1 to 1000000 messages/s, not %d", c.rate)
	case c.duration <= 0 || c.duration > 10*time.Minute:
		return c, fmt.Errorf("-duration must be positive and at most 10m, not %s", c.duration)
	case c.size < headerBytes || c.size > 1<<20:
		return c, fmt.Errorf("-size must be %d to %d bytes, not %d", headerBytes, 1<<20, c.size)
	case c.inflight < 1:
		return c, fmt.Errorf("-inflight must be at least 1, not %d", c.inflight)
	case c.consumeFrom != "leader" && c.consumeFrom != "follower":
		return c, fmt.Errorf("-consume-from must be leader or follower, not %q", c.consumeFrom)
	case c.consumeFrom == "follower" && c.replicas == 1:
		return c, errors.New("-consume-from follower needs -replicas 3 (one server has no follower)")
	case c.drain <= 0:
		return c, fmt.Errorf("-drain must be positive, not %s", c.drain)
	case c.messages() < 1:
		return c, errors.New("-rate × -duration is less than one message")
	}
	return c, nil
}

// Result is the run's report, printed as JSON.
type Result struct {
	Replicas     int                `json:"replicas"`
	Servers      int                `json:"servers"`
	Publish      string             `json:"publish"` // sync or async
	ConsumeFrom  string             `json:"consume_from"`
	Rate         int                `json:"offered_rate"`
	Duration     float64            `json:"duration_s"`
	Size         int                `json:"size"`
	Sent         int                `json:"sent"`
	AchievedRate float64            `json:"achieved_rate"`
	Received     int                `json:"received"`
	Lost         int                `json:"lost"`
	Duplicated   int                `json:"duplicated"`
	OutOfOrder   int                `json:"out_of_order"`
	Latency      benchkit.Quantiles `json:"publish_to_consume_ms"`
	Ack          benchkit.Quantiles `json:"ack_ms,omitzero"` // sync: the wait for each acknowledgement
	CPUPerMsg    float64            `json:"cpu_ms_per_msg"`  // the whole process: servers, publisher, consumer
	Note         string             `json:"note"`
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	servers, cleanup, err := startServers(c.replicas)
	defer cleanup()
	if err != nil {
		return err
	}
	res, err := measure(c, servers)
	if res != nil {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(stdout, string(b))
	}
	return err
}

// startServers starts one server, or three forming a JetStream cluster on
// loopback. cleanup shuts them down and removes their stores; it is safe
// to call after an error.
func startServers(n int) ([]*server.Server, func(), error) {
	var servers []*server.Server
	var dirs []string
	cleanup := func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	var routePorts []int
	var routes []*url.URL
	if n > 1 {
		// Reserve the route ports first: every server needs all of them.
		var lns []net.Listener
		for range n {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, cleanup, err
			}
			lns = append(lns, ln)
			p := ln.Addr().(*net.TCPAddr).Port
			routePorts = append(routePorts, p)
			routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
		}
		for _, ln := range lns {
			ln.Close()
		}
	}
	for i := range n {
		dir, err := os.MkdirTemp("", "jsanchor-")
		if err != nil {
			return servers, cleanup, err
		}
		dirs = append(dirs, dir)
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   dir,
			NoLog:      true,
			NoSigs:     true,
		}
		if n > 1 {
			opts.Cluster = server.ClusterOpts{Name: "jsanchor", Host: "127.0.0.1", Port: routePorts[i]}
			opts.Routes = routes
		}
		s, err := server.NewServer(opts)
		if err != nil {
			return servers, cleanup, fmt.Errorf("server n%d: %w", i+1, err)
		}
		servers = append(servers, s)
		s.Start()
	}
	for _, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			return servers, cleanup, fmt.Errorf("server %s did not accept connections within 10 s", s.Name())
		}
	}
	return servers, cleanup, nil
}

// createStream creates the stream once the cluster has a meta leader (a
// fresh cluster refuses it until then) and waits for its own leader and,
// with replicas, for every follower to be current.
func createStream(ctx context.Context, js jetstream.JetStream, replicas int) (*jetstream.StreamInfo, error) {
	cfg := jetstream.StreamConfig{Name: "anchor", Subjects: []string{"anchor.>"}, Storage: jetstream.FileStorage, Replicas: replicas}
	var lastErr error
	for ctx.Err() == nil {
		// A request a cluster without a meta leader yet does not answer
		// waits for its own deadline, and is tried again.
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := js.CreateStream(try, cfg)
		if err == nil {
			var info *jetstream.StreamInfo
			info, err = st.Info(try)
			if err == nil && ready(info, replicas) {
				cancel()
				return info, nil
			}
		}
		cancel()
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr == nil {
		lastErr = ctx.Err()
	}
	return nil, fmt.Errorf("create an R%d stream: %w", replicas, lastErr)
}

func ready(info *jetstream.StreamInfo, replicas int) bool {
	if replicas == 1 {
		return true
	}
	if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != replicas-1 {
		return false
	}
	for _, p := range info.Cluster.Replicas {
		if !p.Current {
			return false
		}
	}
	return true
}

// consumer is what the ordered consumer saw.
type consumer struct {
	mu         sync.Mutex
	lat        []time.Duration
	seen       []bool
	received   int
	duplicated int
	outOfOrder int
	next       int // the index expected next
	all        chan struct{}
}

func (k *consumer) take(m jetstream.Msg) {
	now := time.Now()
	d := m.Data()
	if len(d) < headerBytes {
		return
	}
	sent := int64(binary.BigEndian.Uint64(d))
	i := int(binary.BigEndian.Uint64(d[8:]))
	k.mu.Lock()
	defer k.mu.Unlock()
	if i < 0 || i >= len(k.seen) {
		return
	}
	if k.seen[i] {
		k.duplicated++
		return
	}
	k.seen[i] = true
	if i != k.next {
		k.outOfOrder++
	}
	k.next = i + 1
	k.lat = append(k.lat, now.Sub(time.Unix(0, sent)))
	k.received++
	if k.received == len(k.seen) {
		close(k.all)
	}
}

func measure(c config, servers []*server.Server) (*Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.duration+c.drain+time.Minute)
	defer cancel()
	admin, err := nats.Connect(servers[0].ClientURL())
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	ajs, err := jetstream.New(admin)
	if err != nil {
		return nil, err
	}
	setup, cancelSetup := context.WithTimeout(ctx, 30*time.Second)
	info, err := createStream(setup, ajs, c.replicas)
	cancelSetup()
	if err != nil {
		return nil, err
	}
	leader, follower := servers[0], servers[0]
	if c.replicas > 1 {
		for _, s := range servers {
			if s.Name() == info.Cluster.Leader {
				leader = s
			} else {
				follower = s
			}
		}
	}
	pubConn, err := nats.Connect(leader.ClientURL())
	if err != nil {
		return nil, err
	}
	defer pubConn.Close()
	on := leader
	if c.consumeFrom == "follower" {
		on = follower
	}
	subConn, err := nats.Connect(on.ClientURL())
	if err != nil {
		return nil, err
	}
	defer subConn.Close()
	pjs, err := jetstream.New(pubConn, jetstream.WithPublishAsyncMaxPending(c.inflight))
	if err != nil {
		return nil, err
	}
	sjs, err := jetstream.New(subConn)
	if err != nil {
		return nil, err
	}
	st, err := sjs.Stream(ctx, "anchor")
	if err != nil {
		return nil, err
	}
	oc, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, fmt.Errorf("ordered consumer: %w", err)
	}
	n := c.messages()
	k := &consumer{lat: make([]time.Duration, 0, n), seen: make([]bool, n), all: make(chan struct{})}
	cc, err := oc.Consume(k.take)
	if err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	defer cc.Stop()

	res := &Result{
		Replicas: c.replicas, Servers: len(servers), Publish: "sync", ConsumeFrom: c.consumeFrom,
		Rate: c.rate, Duration: c.duration.Seconds(), Size: c.size,
		Note: "servers, publisher and consumer in one process on loopback: the CPU is all of theirs",
	}
	if c.async {
		res.Publish = "async"
	}
	payload := make([]byte, c.size)
	acks := make([]time.Duration, 0, n)
	every := time.Second / time.Duration(c.rate)
	cpu0 := benchkit.CPUTime()
	t0 := time.Now()
	var pubErr error
	for i := range n {
		if d := time.Until(t0.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
		}
		at := time.Now()
		binary.BigEndian.PutUint64(payload, uint64(at.UnixNano()))
		binary.BigEndian.PutUint64(payload[8:], uint64(i))
		if c.async {
			// The client copies the payload into its buffer.
			if _, err := pjs.PublishAsync("anchor.a", payload); err != nil {
				pubErr = fmt.Errorf("publish %d: %w", i, err)
				break
			}
		} else {
			if _, err := pjs.Publish(ctx, "anchor.a", payload); err != nil {
				pubErr = fmt.Errorf("publish %d: %w", i, err)
				break
			}
			acks = append(acks, time.Since(at))
		}
		res.Sent++
	}
	elapsed := time.Since(t0)
	if c.async && pubErr == nil {
		select {
		case <-pjs.PublishAsyncComplete():
		case <-time.After(c.drain):
			pubErr = fmt.Errorf("%d publishes unacknowledged %s after the last", pjs.PublishAsyncPending(), c.drain)
		}
	}
	if res.Sent == n {
		select {
		case <-k.all:
		case <-time.After(c.drain):
		}
	} else {
		time.Sleep(min(c.drain, 2*time.Second))
	}
	cpu := benchkit.CPUTime() - cpu0
	cc.Stop()

	k.mu.Lock()
	defer k.mu.Unlock()
	res.AchievedRate = math.Round(float64(res.Sent) / elapsed.Seconds())
	res.Received = k.received
	res.Lost = res.Sent - k.received
	res.Duplicated = k.duplicated
	res.OutOfOrder = k.outOfOrder
	res.Latency = benchkit.QuantilesOf(k.lat)
	res.Ack = benchkit.QuantilesOf(acks)
	res.CPUPerMsg = math.Round(float64(cpu)/float64(max(res.Sent, 1))/1e3) / 1e3
	if pubErr == nil && res.Lost > 0 {
		pubErr = fmt.Errorf("%d of %d messages not consumed %s after the last publish", res.Lost, res.Sent, c.drain)
	}
	return res, pubErr
}
