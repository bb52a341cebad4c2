package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	ringcast "github.com/ringcast/ringcast/clients/go"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

const loadSynopsis = `load [flags]

Drives a running ringcast server over loopback and measures the SERVER from
outside: its CPU, RSS and heap come from its own /metrics, scraped before and
after the measured window, so the load tool's own work is excluded. Prints
one JSON object on stdout; progress goes to stderr.

Fan-out (default): --subscribers streams resume at the current head (no
replay, no topic filter) and read and decode every message, checking that
positioned seqs are consecutive. Once all have caught up, --publishers
publish one-fact commits at --rate commits/s in total (0: as fast as they
can) for --warmup, then for the measured --duration. Publishers wait while
the slowest subscriber is --max-lead commits behind, so no stream is cut for
lagging: at --rate 0 the figure is the fan-out the subscribers sustain.

Idle (--idle N): opens N streams and publishes nothing; once all have caught
up and the server's ringcast_subscribers gauge counts them, reports the
server's RSS, heap and stack growth per stream.

The load tool shares the machine with the server: on few cores, peak
figures are bounded by the tool as much as by the server. Only loopback
servers are accepted unless --allow-remote is given. Stops after the
measured window, or on SIGINT (reporting what was measured so far).`

// loadConfig is the parsed and checked flag set of "ringcast load".
type loadConfig struct {
	server      string
	token       string
	protocol    ringcast.Protocol
	subscribers int
	connections int
	idle        int
	publishers  int
	rate        float64
	duration    time.Duration
	warmup      time.Duration
	maxLead     int
	ready       time.Duration
	progress    time.Duration
}

func loadCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("load", loadSynopsis, stderr)
	cf.register(fs)
	subscribers := fs.Int("subscribers", 100, "fan-out mode: number of subscribing streams")
	connections := fs.Int("connections", 0, "grpc only: h2c connections the streams are spread over, each with its own HTTP client (0: one per 100 streams); connect and grpcweb use HTTP/1.1, one connection per stream")
	idle := fs.Int("idle", 0, "idle mode: open this many streams, publish nothing, report the server's memory per stream (0: fan-out mode)")
	publishers := fs.Int("publishers", 4, "concurrent publishers (each waits for its receipt, so a paced rate needs enough of them to cover the round trip)")
	rate := fs.Float64("rate", 1000, "commits per second over all publishers (0: as fast as they can)")
	duration := fs.Duration("duration", 10*time.Second, "length of the measured window")
	warmup := fs.Duration("warmup", 2*time.Second, "publishing before the measured window starts")
	maxLead := fs.Int("max-lead", 0, "publishers wait while the slowest subscriber is this many commits behind (0: half the server's window)")
	ready := fs.Duration("ready-timeout", 60*time.Second, "how long to wait for all streams to open and catch up")
	progress := fs.Duration("progress", time.Second, "interval of progress lines on stderr (0: none)")
	allowRemote := fs.Bool("allow-remote", false, "accept a --server that is not a loopback address")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "ringcast load: "+format+"\n", a...)
		return errUsage
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments %q", fs.Args())
	}
	p, err := ringcast.ParseProtocol(cf.protocol)
	if err != nil {
		return bad("--protocol: %v", err)
	}
	if err := checkLoadServer(cf.server, *allowRemote); err != nil {
		return bad("%v", err)
	}
	cfg := loadConfig{
		server: strings.TrimRight(cf.server, "/"), token: cf.token, protocol: p,
		subscribers: *subscribers, connections: *connections, idle: *idle,
		publishers: *publishers, rate: *rate, duration: *duration, warmup: *warmup,
		maxLead: *maxLead, ready: *ready, progress: *progress,
	}
	streams := cfg.subscribers
	switch {
	case cfg.idle < 0:
		return bad("--idle must not be negative")
	case cfg.idle > 0:
		streams = cfg.idle
	case cfg.subscribers < 1:
		return bad("--subscribers must be at least 1")
	case cfg.publishers < 1:
		return bad("--publishers must be at least 1")
	case cfg.rate < 0 || math.IsNaN(cfg.rate) || math.IsInf(cfg.rate, 0):
		return bad("--rate must be a number >= 0")
	case cfg.duration <= 0:
		return bad("--duration must be positive")
	case cfg.warmup < 0:
		return bad("--warmup must not be negative")
	case cfg.maxLead < 0:
		return bad("--max-lead must not be negative")
	}
	if cfg.ready <= 0 {
		return bad("--ready-timeout must be positive")
	}
	if cfg.progress < 0 {
		return bad("--progress must not be negative")
	}
	switch {
	case cfg.connections < 0:
		return bad("--connections must not be negative")
	case p != ringcast.ProtocolGRPC && cfg.connections != 0 && cfg.connections != streams:
		return bad("--connections applies to grpc: over HTTP/1.1 (%s) every stream has its own connection", p)
	case cfg.connections > streams:
		return bad("--connections (%d) must not exceed the number of streams (%d)", cfg.connections, streams)
	case cfg.connections == 0 && p == ringcast.ProtocolGRPC:
		cfg.connections = (streams + 99) / 100
	case cfg.connections == 0:
		cfg.connections = streams
	}
	stderr = &lockedWriter{w: stderr} // progress is written from another goroutine
	var res any
	if cfg.idle > 0 {
		res, err = runIdle(ctx, cfg, stderr)
	} else {
		res, err = runFanout(ctx, cfg, stderr)
	}
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// checkLoadServer accepts an http(s) URL whose host is a loopback address
// (or "localhost"), or any host when allowRemote is set.
func checkLoadServer(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--server %q: want a URL like http://127.0.0.1:8080", raw)
	}
	if allowRemote {
		return nil
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--server %q is not a loopback address: load is driven only against this machine (--allow-remote overrides)", raw)
}

// loadSub is one subscribing stream's state. Counters are written by the
// stream's goroutine and read by the others.
type loadSub struct {
	commits atomic.Int64  // commits received
	lastSeq atomic.Uint64 // last positioned seq received
	gaps    atomic.Int64  // positioned seqs that were not last+1
	done    atomic.Bool   // the stream has ended
	lat     latencyHist   // written by the stream's goroutine, read after it ends
	_       [64]byte      // keep neighbours' counters off this cache line
}

// loadRun is one run's shared state.
type loadRun struct {
	cfg       loadConfig
	epoch     uint64
	measuring atomic.Bool
	subs      []*loadSub

	openFailures atomic.Int64 // streams that ended before CaughtUp
	streamEnds   atomic.Int64 // streams that ended after CaughtUp (not by the tool)
	resyncs      atomic.Int64 // ResyncRequired or Gap received
	epochErrs    atomic.Int64 // messages of another epoch
	errMu        sync.Mutex
	firstErr     string

	published   atomic.Int64  // commits acknowledged
	publishErrs atomic.Int64  // publishes that failed
	head        atomic.Uint64 // highest receipt seq
	slowest     atomic.Uint64 // lowest lastSeq over live subscribers
}

func (r *loadRun) noteErr(err error) {
	r.errMu.Lock()
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
	r.errMu.Unlock()
}

func (r *loadRun) errors() int64 {
	return r.openFailures.Load() + r.streamEnds.Load() + r.resyncs.Load() + r.epochErrs.Load()
}

// clients holds every HTTP client a run makes, so their connections can be
// closed at the end.
type clients []*http.Client

func (cs *clients) rpc(cfg loadConfig, maxIdle int) ringcastv1connect.EventServiceClient {
	hc := ringcast.NewHTTPClient(cfg.protocol)
	if t, ok := hc.Transport.(*http.Transport); ok && maxIdle > 0 {
		t.MaxIdleConnsPerHost = maxIdle
	}
	*cs = append(*cs, hc)
	opts := []ringcast.Option{ringcast.WithProtocol(cfg.protocol), ringcast.WithHTTPClient(hc)}
	if cfg.token != "" {
		opts = append(opts, ringcast.WithToken(cfg.token))
	}
	return ringcast.NewClient(cfg.server, opts...).RPC()
}

func (cs clients) close() {
	for _, c := range cs {
		c.CloseIdleConnections()
	}
}

// open is what both modes start with: the server's status (over Connect),
// a scraper of its /metrics, and the stream clients — one per connection for
// gRPC, one shared client (a connection per stream) over HTTP/1.1.
func (cs *clients) open(ctx context.Context, cfg loadConfig) (scrape func(context.Context) (*serverMemory, error), st *ringcastv1.ServerStatus, rpcs []ringcastv1connect.EventServiceClient, err error) {
	ctl := cs.rpc(loadConfig{server: cfg.server, token: cfg.token, protocol: ringcast.ProtocolConnect}, 0)
	metricsHC := &http.Client{}
	*cs = append(*cs, metricsHC)
	scrape = func(ctx context.Context) (*serverMemory, error) {
		return scrapeServer(ctx, metricsHC, cfg.server+"/metrics", cfg.token)
	}
	if st, err = serverStatus(ctx, ctl); err != nil {
		return nil, nil, nil, err
	}
	if cfg.protocol != ringcast.ProtocolGRPC {
		return scrape, st, []ringcastv1connect.EventServiceClient{cs.rpc(cfg, 0)}, nil
	}
	rpcs = make([]ringcastv1connect.EventServiceClient, cfg.connections)
	for i := range rpcs {
		rpcs[i] = cs.rpc(cfg, 0)
	}
	return scrape, st, rpcs, nil
}

// openStreams starts one goroutine per subscriber, each resuming at since,
// and waits until every stream has caught up (or failed to). It opens at
// most 64 streams at a time.
func (r *loadRun) openStreams(ctx context.Context, n int, rpcs []ringcastv1connect.EventServiceClient, since uint64, wg *sync.WaitGroup) error {
	r.subs = make([]*loadSub, n)
	ready := make(chan struct{}, n)
	sem := make(chan struct{}, 64)
	for i := range r.subs {
		s := &loadSub{}
		s.lastSeq.Store(since)
		r.subs[i] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				ready <- struct{}{}
				return
			}
			var once sync.Once
			signal := func() { once.Do(func() { <-sem; ready <- struct{}{} }) }
			defer signal()
			r.subscribe(ctx, s, rpcs[i%len(rpcs)], since, signal)
		}()
	}
	timeout := time.NewTimer(r.cfg.ready)
	defer timeout.Stop()
	for got := 0; got < n; got++ {
		select {
		case <-ready:
		case <-timeout.C:
			return fmt.Errorf("only %d of %d streams caught up within --ready-timeout %v", got, n, r.cfg.ready)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f := r.openFailures.Load(); f > 0 {
		return fmt.Errorf("%d of %d streams failed to open: %s", f, n, r.firstErr)
	}
	return nil
}

// subscribe reads one stream until ctx ends, calling caughtUp once the
// stream is live (or has failed).
func (r *loadRun) subscribe(ctx context.Context, s *loadSub, rpc ringcastv1connect.EventServiceClient, since uint64, caughtUp func()) {
	defer s.done.Store(true)
	live := false
	fail := func(err error) {
		r.noteErr(err)
		if live {
			r.streamEnds.Add(1)
		} else {
			r.openFailures.Add(1)
		}
	}
	stream, err := rpc.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{
		SinceSeq: since, InstanceEpoch: r.epoch,
	}))
	if err != nil {
		if ctx.Err() == nil {
			fail(err)
		}
		return
	}
	defer stream.Close()
	last := since
	for stream.Receive() {
		m := stream.Msg()
		if m.InstanceEpoch != r.epoch {
			r.epochErrs.Add(1)
			r.noteErr(fmt.Errorf("message of epoch %x on a stream of epoch %x (server restarted?)", m.InstanceEpoch, r.epoch))
		}
		if m.Seq > 0 {
			if m.Seq != last+1 {
				s.gaps.Add(1)
			}
			last = m.Seq
			s.lastSeq.Store(last)
		}
		switch ev := m.Event.(type) {
		case *ringcastv1.SubscribeEventsResponse_Commit:
			s.commits.Add(1)
			if r.measuring.Load() && m.EventTime != nil {
				s.lat.add(time.Since(m.EventTime.AsTime()))
			}
		case *ringcastv1.SubscribeEventsResponse_CaughtUp:
			if !live {
				live = true
				caughtUp()
			}
		case *ringcastv1.SubscribeEventsResponse_ResyncRequired:
			r.resyncs.Add(1)
			r.noteErr(fmt.Errorf("resync required: %v", ev.ResyncRequired.GetReason()))
		case *ringcastv1.SubscribeEventsResponse_Gap:
			r.resyncs.Add(1)
			r.noteErr(fmt.Errorf("gap: %v", ev.Gap.GetReason()))
		}
	}
	if ctx.Err() != nil {
		return
	}
	err = stream.Err()
	if err == nil {
		err = errors.New("stream ended by the server")
	}
	fail(err)
}

// trackSlowest keeps r.slowest at the lowest seq reached by a live stream.
func (r *loadRun) trackSlowest(ctx context.Context) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		low := uint64(math.MaxUint64)
		for _, s := range r.subs {
			if !s.done.Load() {
				low = min(low, s.lastSeq.Load())
			}
		}
		r.slowest.Store(low)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publish publishes one-fact commits until ctx ends, paced to r.cfg.rate
// over all publishers, waiting while the slowest stream is maxLead behind.
func (r *loadRun) publish(ctx context.Context, id int, rpc ringcastv1connect.EventServiceClient, maxLead uint64) {
	var interval time.Duration
	if r.cfg.rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(r.cfg.publishers) / r.cfg.rate)
	}
	next := time.Now().Add(interval * time.Duration(id) / time.Duration(r.cfg.publishers))
	key := fmt.Sprintf("p%d", id)
	var n uint64
	for ctx.Err() == nil {
		for r.tooFarAhead(maxLead) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
		if interval > 0 {
			now := time.Now()
			if d := next.Sub(now); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			} else if d < -100*time.Millisecond {
				next = now // too far behind: drop the debt rather than burst
			}
			next = next.Add(interval)
		}
		n++
		payload := binary.BigEndian.AppendUint64(nil, n)
		res, err := rpc.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{
			Topic: "load/" + key, Type: "load.tick", Key: key,
			Payload: &ringcastv1.Fact_BinaryData{BinaryData: payload}, ContentType: "application/octet-stream",
		}}}))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.publishErrs.Add(1)
			r.noteErr(fmt.Errorf("publish: %w", err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		r.published.Add(1)
		for seq := res.Msg.Seq; ; {
			h := r.head.Load()
			if seq <= h || r.head.CompareAndSwap(h, seq) {
				break
			}
		}
	}
}

// tooFarAhead reports whether the slowest live stream is maxLead or more
// commits behind the head.
func (r *loadRun) tooFarAhead(maxLead uint64) bool {
	slowest := r.slowest.Load()
	return slowest != math.MaxUint64 && r.head.Load() >= slowest+maxLead
}

func (r *loadRun) deliveries() int64 {
	var n int64
	for _, s := range r.subs {
		n += s.commits.Load()
	}
	return n
}

func (r *loadRun) gaps() int64 {
	var n int64
	for _, s := range r.subs {
		n += s.gaps.Load()
	}
	return n
}

// sleepCtx sleeps d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// serverStatus asks the server for its epoch, head and window.
func serverStatus(ctx context.Context, rpc ringcastv1connect.EventServiceClient) (*ringcastv1.ServerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := rpc.GetServerStatus(ctx, connect.NewRequest(&ringcastv1.GetServerStatusRequest{}))
	if err != nil {
		return nil, fmt.Errorf("server status: %w", err)
	}
	if res.Msg.Status == nil {
		return nil, errors.New("server status: empty response")
	}
	return res.Msg.Status, nil
}

// FanoutResult is the JSON report of a fan-out run.
type FanoutResult struct {
	Mode        string  `json:"mode"`
	Server      string  `json:"server"`
	Protocol    string  `json:"protocol"`
	Subscribers int     `json:"subscribers"`
	Connections int     `json:"connections"`
	Publishers  int     `json:"publishers"`
	RateTarget  float64 `json:"rate_target"`
	MaxLead     uint64  `json:"max_lead"`
	WarmupS     float64 `json:"warmup_s"`
	DurationS   float64 `json:"duration_s"`
	Interrupted bool    `json:"interrupted,omitempty"`

	Commits        int64   `json:"commits"`
	CommitsPerS    float64 `json:"commits_per_s"`
	PublishErrors  int64   `json:"publish_errors"`
	Deliveries     int64   `json:"deliveries"`
	DeliveriesPerS float64 `json:"deliveries_per_s"`
	// DeliveredRatio is deliveries / (commits × subscribers) over the
	// window; near 1 when the streams keep up.
	DeliveredRatio float64 `json:"delivered_ratio"`

	GapViolations int64 `json:"gap_violations"`
	// Errors counts streams that failed or ended, resyncs and gaps, and
	// messages of another epoch.
	Errors      int64  `json:"errors"`
	FirstError  string `json:"first_error,omitempty"`
	BehindAtEnd int    `json:"behind_at_end"`

	LatencyUS   *latencyReport `json:"latency_us,omitempty"`
	ServerCPU   *cpuReport     `json:"server_cpu,omitempty"`
	ToolCPU     *cpuReport     `json:"load_tool_cpu,omitempty"`
	ServerAfter *serverMemory  `json:"server_after"`
}

type cpuReport struct {
	Seconds             float64 `json:"seconds"`
	Cores               float64 `json:"cores"`
	MsPer1000Deliveries float64 `json:"ms_per_1000_deliveries,omitempty"`
}

type latencyReport struct {
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
}

type serverMemory struct {
	RSSBytes       float64 `json:"rss_bytes"`
	HeapInuseBytes float64 `json:"heap_inuse_bytes"`
	StackBytes     float64 `json:"stack_inuse_bytes"`
	Goroutines     float64 `json:"goroutines"`
	Subscribers    float64 `json:"subscribers"`
	CPUSeconds     float64 `json:"-"`
}

func runFanout(ctx context.Context, cfg loadConfig, stderr io.Writer) (*FanoutResult, error) {
	var cs clients
	defer cs.close()
	scrape, st, rpcs, err := cs.open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := scrape(ctx); err != nil {
		return nil, err
	}
	maxLead := uint64(cfg.maxLead)
	if maxLead == 0 {
		maxLead = max(uint64(st.Window)/2, 1)
	}
	if maxLead >= uint64(st.Window) {
		return nil, fmt.Errorf("--max-lead %d must be below the server's window (%d), or streams are cut for lagging", maxLead, st.Window)
	}
	r := &loadRun{cfg: cfg, epoch: st.InstanceEpoch}
	r.head.Store(st.HeadSeq)
	r.slowest.Store(st.HeadSeq)

	subCtx, stopSubs := context.WithCancel(context.Background())
	var subWG sync.WaitGroup
	defer func() { stopSubs(); subWG.Wait() }()
	go func() {
		select {
		case <-ctx.Done():
			stopSubs()
		case <-subCtx.Done():
		}
	}()
	fmt.Fprintf(stderr, "load: opening %d %s streams over %d connections to %s (head %d, window %d)\n",
		cfg.subscribers, cfg.protocol, cfg.connections, cfg.server, st.HeadSeq, st.Window)
	if err := r.openStreams(subCtx, cfg.subscribers, rpcs, st.HeadSeq, &subWG); err != nil {
		return nil, err
	}

	pubCtx, stopPubs := context.WithCancel(subCtx)
	var pubWG sync.WaitGroup
	defer func() { stopPubs(); pubWG.Wait() }()
	pubWG.Add(1)
	go func() { defer pubWG.Done(); r.trackSlowest(pubCtx) }()
	pub := cs.rpc(cfg, cfg.publishers+1) // its own connections, apart from the streams'
	for i := range cfg.publishers {
		pubWG.Add(1)
		go func() { defer pubWG.Done(); r.publish(pubCtx, i, pub, maxLead) }()
	}
	if cfg.progress > 0 {
		pubWG.Add(1)
		go func() { defer pubWG.Done(); r.reportProgress(pubCtx, stderr) }()
	}
	fmt.Fprintf(stderr, "load: all streams live; publishing (rate %s, %d publishers), warmup %v\n", rateString(cfg.rate), cfg.publishers, cfg.warmup)

	interrupted := !sleepCtx(ctx, cfg.warmup)
	if interrupted {
		return nil, fmt.Errorf("interrupted before the measured window: %w", context.Cause(ctx))
	}
	before, err := scrape(ctx)
	if err != nil {
		return nil, err
	}
	toolCPU0, toolOK := ownCPUSeconds()
	d0, c0, t0 := r.deliveries(), r.published.Load(), time.Now()
	r.measuring.Store(true)
	fmt.Fprintf(stderr, "load: measuring for %v\n", cfg.duration)
	interrupted = !sleepCtx(ctx, cfg.duration)
	r.measuring.Store(false)
	d1, c1, t1 := r.deliveries(), r.published.Load(), time.Now()
	toolCPU1, _ := ownCPUSeconds()
	after, err := scrape(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	stopPubs()
	pubWG.Wait()

	// Give the streams a moment to receive the last commits.
	behind := 0
	final := r.head.Load()
	deadline := time.Now().Add(2 * time.Second)
	for {
		behind = 0
		for _, s := range r.subs {
			if s.lastSeq.Load() < final {
				behind++
			}
		}
		if behind == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopSubs()
	subWG.Wait()

	secs := t1.Sub(t0).Seconds()
	deliveries := d1 - d0
	commits := c1 - c0
	res := &FanoutResult{
		Mode: "fanout", Server: cfg.server, Protocol: string(cfg.protocol),
		Subscribers: cfg.subscribers, Connections: cfg.connections, Publishers: cfg.publishers,
		RateTarget: cfg.rate, MaxLead: maxLead, WarmupS: cfg.warmup.Seconds(), DurationS: round(secs, 3),
		Interrupted: interrupted,
		Commits:     commits, CommitsPerS: round(float64(commits)/secs, 1), PublishErrors: r.publishErrs.Load(),
		Deliveries: deliveries, DeliveriesPerS: round(float64(deliveries)/secs, 0),
		GapViolations: r.gaps(), Errors: r.errors(), FirstError: r.firstErr, BehindAtEnd: behind,
		ServerAfter: after,
	}
	if commits > 0 {
		res.DeliveredRatio = round(float64(deliveries)/float64(commits*int64(cfg.subscribers)), 4)
	}
	res.ServerCPU = newCPUReport(after.CPUSeconds-before.CPUSeconds, secs, deliveries)
	if toolOK {
		res.ToolCPU = newCPUReport(toolCPU1-toolCPU0, secs, deliveries)
	}
	var h latencyHist
	for _, s := range r.subs {
		h.merge(&s.lat)
	}
	res.LatencyUS = h.report()
	fmt.Fprintf(stderr, "load: %.0f deliveries/s, server CPU %.2f ms per 1,000 deliveries, %d gap violations, %d errors\n",
		res.DeliveriesPerS, res.ServerCPU.MsPer1000Deliveries, res.GapViolations, res.Errors)
	return res, nil
}

func rateString(rate float64) string {
	if rate == 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(rate, 'f', -1, 64) + "/s"
}

func newCPUReport(cpu, secs float64, deliveries int64) *cpuReport {
	c := &cpuReport{Seconds: round(cpu, 3), Cores: round(cpu/secs, 3)}
	if deliveries > 0 {
		c.MsPer1000Deliveries = round(cpu*1e6/float64(deliveries), 3)
	}
	return c
}

func (r *loadRun) reportProgress(ctx context.Context, stderr io.Writer) {
	t := time.NewTicker(r.cfg.progress)
	defer t.Stop()
	start := time.Now()
	lastD, lastC, lastT := r.deliveries(), r.published.Load(), start
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d, c := r.deliveries(), r.published.Load()
			secs := now.Sub(lastT).Seconds()
			lead := int64(r.head.Load()) - int64(min(r.slowest.Load(), r.head.Load()))
			fmt.Fprintf(stderr, "load: %5.1fs  %8.0f commits/s  %10.0f deliveries/s  slowest %d behind  gaps %d  errors %d\n",
				now.Sub(start).Seconds(), float64(c-lastC)/secs, float64(d-lastD)/secs, lead, r.gaps(), r.errors())
			lastD, lastC, lastT = d, c, now
		}
	}
}

// IdleResult is the JSON report of an idle run.
type IdleResult struct {
	Mode        string `json:"mode"`
	Server      string `json:"server"`
	Protocol    string `json:"protocol"`
	Idle        int    `json:"idle"`
	Connections int    `json:"connections"`

	Before *serverMemory `json:"server_before"`
	After  *serverMemory `json:"server_after"`

	RSSPerStream        float64 `json:"rss_bytes_per_stream"`
	HeapPerStream       float64 `json:"heap_inuse_bytes_per_stream"`
	StackPerStream      float64 `json:"stack_inuse_bytes_per_stream"`
	GoroutinesPerStream float64 `json:"goroutines_per_stream"`
	Errors              int64   `json:"errors"`
	FirstError          string  `json:"first_error,omitempty"`
}

func runIdle(ctx context.Context, cfg loadConfig, stderr io.Writer) (*IdleResult, error) {
	var cs clients
	defer cs.close()
	scrape, st, rpcs, err := cs.open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	before, err := scrapeMedian(ctx, scrape)
	if err != nil {
		return nil, err
	}
	r := &loadRun{cfg: cfg, epoch: st.InstanceEpoch}
	subCtx, stopSubs := context.WithCancel(context.Background())
	var subWG sync.WaitGroup
	defer func() { stopSubs(); subWG.Wait() }()
	go func() {
		select {
		case <-ctx.Done():
			stopSubs()
		case <-subCtx.Done():
		}
	}()
	fmt.Fprintf(stderr, "load: opening %d idle %s streams over %d connections to %s\n", cfg.idle, cfg.protocol, cfg.connections, cfg.server)
	if err := r.openStreams(subCtx, cfg.idle, rpcs, st.HeadSeq, &subWG); err != nil {
		return nil, err
	}
	// Wait for the server to count them all.
	want := before.Subscribers + float64(cfg.idle)
	deadline := time.Now().Add(cfg.ready)
	for {
		m, err := scrape(ctx)
		if err != nil {
			return nil, err
		}
		if m.Subscribers >= want {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the server counts %.0f subscribers, want %.0f, after --ready-timeout %v", m.Subscribers, want, cfg.ready)
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return nil, context.Cause(ctx)
		}
	}
	fmt.Fprintf(stderr, "load: the server counts all %d streams; measuring\n", cfg.idle)
	if !sleepCtx(ctx, 500*time.Millisecond) {
		return nil, context.Cause(ctx)
	}
	after, err := scrapeMedian(ctx, scrape)
	if err != nil {
		return nil, err
	}
	stopSubs()
	subWG.Wait()
	n := float64(cfg.idle)
	res := &IdleResult{
		Mode: "idle", Server: cfg.server, Protocol: string(cfg.protocol), Idle: cfg.idle, Connections: cfg.connections,
		Before: before, After: after,
		RSSPerStream:        round((after.RSSBytes-before.RSSBytes)/n, 0),
		HeapPerStream:       round((after.HeapInuseBytes-before.HeapInuseBytes)/n, 0),
		StackPerStream:      round((after.StackBytes-before.StackBytes)/n, 0),
		GoroutinesPerStream: round((after.Goroutines-before.Goroutines)/n, 2),
		Errors:              r.errors(), FirstError: r.firstErr,
	}
	fmt.Fprintf(stderr, "load: per idle stream: RSS %.0f B, heap in use %.0f B, stacks %.0f B\n",
		res.RSSPerStream, res.HeapPerStream, res.StackPerStream)
	return res, nil
}

// scrapeMedian scrapes three times, 200 ms apart, and keeps each figure's
// median: heap figures move with the server's GC cycles.
func scrapeMedian(ctx context.Context, scrape func(context.Context) (*serverMemory, error)) (*serverMemory, error) {
	var ms []*serverMemory
	for i := range 3 {
		if i > 0 && !sleepCtx(ctx, 200*time.Millisecond) {
			return nil, context.Cause(ctx)
		}
		m, err := scrape(ctx)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	med := func(f func(*serverMemory) float64) float64 {
		v := []float64{f(ms[0]), f(ms[1]), f(ms[2])}
		slices.Sort(v)
		return v[1]
	}
	return &serverMemory{
		RSSBytes:       med(func(m *serverMemory) float64 { return m.RSSBytes }),
		HeapInuseBytes: med(func(m *serverMemory) float64 { return m.HeapInuseBytes }),
		StackBytes:     med(func(m *serverMemory) float64 { return m.StackBytes }),
		Goroutines:     med(func(m *serverMemory) float64 { return m.Goroutines }),
		Subscribers:    ms[2].Subscribers,
		CPUSeconds:     ms[2].CPUSeconds,
	}, nil
}

// scrapeServer reads the server's own process and runtime figures from its
// /metrics.
func scrapeServer(ctx context.Context, hc *http.Client, metricsURL, token string) (*serverMemory, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := scrapeMetrics(ctx, hc, metricsURL, token)
	if err != nil {
		return nil, err
	}
	need := []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines", "ringcast_subscribers"}
	for _, name := range need {
		if _, ok := m[name]; !ok {
			return nil, fmt.Errorf("%s: no %s (a ringcast server on Linux exports it)", metricsURL, name)
		}
	}
	return &serverMemory{
		CPUSeconds:     m["process_cpu_seconds_total"],
		RSSBytes:       m["process_resident_memory_bytes"],
		HeapInuseBytes: m["go_memstats_heap_inuse_bytes"],
		StackBytes:     m["go_memstats_stack_inuse_bytes"],
		Goroutines:     m["go_goroutines"],
		Subscribers:    m["ringcast_subscribers"],
	}, nil
}

// scrapeMetrics reads Prometheus text format and sums each metric's
// samples over its series (enough for the counters and gauges used here).
func scrapeMetrics(ctx context.Context, hc *http.Client, metricsURL, token string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", metricsURL, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				continue
			}
			rest = rest[j+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", metricsURL, err)
	}
	return out, nil
}

// ownCPUSeconds is the load tool's own CPU time, where the platform
// reports it.
func ownCPUSeconds() (float64, bool) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return 0, false
	}
	mfs, err := reg.Gather()
	if err != nil && len(mfs) == 0 {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() == "process_cpu_seconds_total" && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// latencyHist is a log-linear histogram of durations: 16 sub-buckets per
// power of two of nanoseconds (about 6% resolution).
type latencyHist struct {
	n      int64
	max    time.Duration
	counts [64 * 16]uint32
}

func latencyBucket(ns uint64) int {
	if ns < 16 {
		return int(ns)
	}
	e := bits.Len64(ns) - 5 // ns>>e is in [16, 32)
	return (e+1)*16 + int(ns>>e) - 16
}

// latencyLow is the lowest value of bucket i.
func latencyLow(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	e := i/16 - 1
	return uint64(i%16+16) << e
}

func (h *latencyHist) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.n++
	h.max = max(h.max, d)
	h.counts[min(latencyBucket(uint64(d)), len(h.counts)-1)]++
}

func (h *latencyHist) merge(o *latencyHist) {
	h.n += o.n
	h.max = max(h.max, o.max)
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// quantile is the middle of the bucket holding quantile q, in µs.
func (h *latencyHist) quantile(q float64) float64 {
	rank := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += int64(c)
		if seen >= rank && c > 0 {
			lo, hi := latencyLow(i), latencyLow(i+1)
			return float64(lo+hi) / 2 / 1e3
		}
	}
	return float64(h.max) / 1e3
}

func (h *latencyHist) report() *latencyReport {
	if h.n == 0 {
		return nil
	}
	return &latencyReport{
		Samples: h.n,
		P50:     round(h.quantile(0.50), 1),
		P90:     round(h.quantile(0.90), 1),
		P99:     round(h.quantile(0.99), 1),
		Max:     round(float64(h.max)/1e3, 1),
	}
}
