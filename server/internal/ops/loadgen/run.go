package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/core/topic"
)

// loadSub is one subscribing stream's state. Counters are written by the
// stream's goroutine and read by the others.
type loadSub struct {
	commits atomic.Int64  // this run's commits received
	others  atomic.Int64  // other commits received (another publisher's, the demo feed's)
	lastSeq atomic.Uint64 // last positioned seq received
	gaps    atomic.Int64  // positioned seqs that were not last+1
	done    atomic.Bool   // the stream has ended
	lat     latencyHist   // written by the stream's goroutine, read after it ends
	_       [64]byte      // keep neighbours' counters off this cache line
}

// loadRun is one run's shared state.
type loadRun struct {
	cfg       Config
	epoch     uint64
	prefix    string // the topic this run's facts are under (see ownTopicPrefix)
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

	sse *http.Client // SSE streams' client (--protocol sse), else nil
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

func (cs *clients) rpc(cfg Config, maxIdle int) ringcastv1connect.EventServiceClient {
	hc := ringcast.NewHTTPClient(cfg.Protocol)
	if t, ok := hc.Transport.(*http.Transport); ok && maxIdle > 0 {
		t.MaxIdleConnsPerHost = maxIdle
	}
	*cs = append(*cs, hc)
	opts := []ringcast.Option{ringcast.WithProtocol(cfg.Protocol), ringcast.WithHTTPClient(hc)}
	if cfg.Token != "" {
		opts = append(opts, ringcast.WithToken(cfg.Token))
	}
	return ringcast.NewClient(cfg.Server, opts...).RPC()
}

func (cs clients) close() {
	for _, c := range cs {
		c.CloseIdleConnections()
	}
}

// open is what both modes start with: the server's status (over Connect),
// a scraper of its /metrics, and the stream clients — one per connection for
// gRPC, one shared client (a connection per stream) over HTTP/1.1.
func (cs *clients) open(ctx context.Context, cfg Config) (scrape func(context.Context) (*serverMemory, error), st *ringcastv1.ServerStatus, rpcs []ringcastv1connect.EventServiceClient, err error) {
	ctl := cs.rpc(Config{Server: cfg.Server, Token: cfg.Token, Protocol: ringcast.ProtocolConnect}, 0)
	metricsHC := &http.Client{}
	*cs = append(*cs, metricsHC)
	scrape = func(ctx context.Context) (*serverMemory, error) {
		return scrapeServer(ctx, metricsHC, cfg.Server+"/metrics", cfg.Token)
	}
	if st, err = serverStatus(ctx, ctl); err != nil {
		return nil, nil, nil, err
	}
	if cfg.Protocol == ProtocolSSE {
		return scrape, st, nil, nil // the streams use loadRun.sse
	}
	if cfg.Protocol != ringcast.ProtocolGRPC {
		return scrape, st, []ringcastv1connect.EventServiceClient{cs.rpc(cfg, 0)}, nil
	}
	rpcs = make([]ringcastv1connect.EventServiceClient, cfg.Connections)
	for i := range rpcs {
		rpcs[i] = cs.rpc(cfg, 0)
	}
	return scrape, st, rpcs, nil
}

// openStreams starts one goroutine per subscriber, each resuming at since
// (over SSE, when rpcs is nil: at the head), and waits until every stream
// has caught up (or failed to). It opens at most 64 streams at a time.
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
			if rpcs == nil {
				r.subscribeSSE(ctx, s, signal)
				return
			}
			r.subscribe(ctx, s, rpcs[i%len(rpcs)], since, signal)
		}()
	}
	timeout := time.NewTimer(r.cfg.Ready)
	defer timeout.Stop()
	for got := 0; got < n; got++ {
		select {
		case <-ready:
		case <-timeout.C:
			return fmt.Errorf("only %d of %d streams caught up within --ready-timeout %v", got, n, r.cfg.Ready)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f := r.openFailures.Load(); f > 0 {
		return fmt.Errorf("%d of %d streams failed to open: %s", f, n, r.firstErr)
	}
	return nil
}

// failed counts a stream's error: as a stream that ended once it was
// live, as a failure to open before that.
func (r *loadRun) failed(err error, live bool) {
	r.noteErr(err)
	if live {
		r.streamEnds.Add(1)
	} else {
		r.openFailures.Add(1)
	}
}

// subscribe reads one stream until ctx ends, calling caughtUp once the
// stream is live (or has failed).
func (r *loadRun) subscribe(ctx context.Context, s *loadSub, rpc ringcastv1connect.EventServiceClient, since uint64, caughtUp func()) {
	defer s.done.Store(true)
	live := false
	fail := func(err error) { r.failed(err, live) }
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
			if !r.own(ev.Commit) {
				s.others.Add(1)
				break
			}
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

// publish publishes one-fact commits until ctx ends, paced to r.cfg.Rate
// over all publishers, waiting while the slowest stream is maxLead behind.
func (r *loadRun) publish(ctx context.Context, id int, rpc ringcastv1connect.EventServiceClient, maxLead uint64) {
	var interval time.Duration
	if r.cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(r.cfg.Publishers) / r.cfg.Rate)
	}
	next := time.Now().Add(interval * time.Duration(id) / time.Duration(r.cfg.Publishers))
	key := fmt.Sprintf("p%d", id)
	own := r.prefix + "/" + key
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
			Topic: own, Type: "load.tick", Key: key,
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

// ownTopicPrefix is the topic one run's facts are under, "load/<run>",
// <run> drawn at random: a run counts the commits whose first fact's topic
// is under it (topic.Match, the one prefix rule) and no other, so commits published meanwhile by anyone else (the demo
// feed, another run) are received, checked for gaps, and not counted as
// deliveries or timed.
func ownTopicPrefix() string {
	return fmt.Sprintf("load/%016x", rand.Uint64())
}

// own reports whether a commit is one this run published.
func (r *loadRun) own(c *ringcastv1.Commit) bool {
	facts := c.GetFacts()
	return len(facts) > 0 && topic.Match(r.prefix, facts[0].GetTopic())
}

// otherCommits is how many commits of others the streams received.
func (r *loadRun) otherCommits() int64 {
	var n int64
	for _, s := range r.subs {
		n += s.others.Load()
	}
	return n
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

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
