// Command fanbench measures how much ringcast fans out with several
// replicas on one durable stream: it spreads SSE subscribers over the
// replicas, publishes PublishBatch requests to one of them at a fixed
// offered rate, and counts the deliveries every replica makes
// (docs/performance.md, "Replicas and fan-out").
//
// Every commit carries its index and when its request was sent. Each
// subscriber checks that it receives every commit once and in the
// stream's order (the seq of its SSE id rising), and times each one from
// its request's send to its arrival. fanbench prints one JSON object: the
// deliveries per second of all the replicas and of each, the latency, the
// lost, duplicated and reordered deliveries, the publisher's achieved
// rate, and its own CPU and the machine's busy share over the run (the
// servers share the machine with it). It talks only to loopback servers,
// and every step is bounded.
//
//	bash tools/clusterbench.sh start 3
//	go run ./tools/fanbench -servers http://127.0.0.1:18281,http://127.0.0.1:18282,http://127.0.0.1:18283 \
//	  -subscribers 100 -rate 5000 -duration 10s
//
// Flags:
//
//	-servers URLs     the replicas, comma-separated http:// URLs on 127.0.0.0/8 (required)
//	-subscribers N    SSE subscribers over all replicas, dealt out in turn (default 100)
//	-rate R           commits offered per second (default 5000)
//	-duration D       how long to publish (default 10s); R × D commits
//	-publish-to I     the replica (0-based index in -servers) the commits are published to (default 0)
//	-publishers P     PublishBatch requests in flight at once (default 1; above 1 the order
//	                  of commits across requests is the store's, and reorders are not counted)
//	-max-batch M      commits per PublishBatch request at most, 1 to 1024 (default 1024)
//	-size B           bytes of each commit's data object, about (default 100)
//	-drain D          how long to wait after the last publish for deliveries to stop arriving (default 10s)
//	-timeout D        the whole run's bound (default 2m)
//
// A replica's subscribers read the stream that replica follows: what the
// figure measures is the replicas' fan-out and the stream's rate, with the
// servers and fanbench sharing the machine's CPUs.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcast/ringcast/tools/internal/benchkit"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fanbench:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	servers     []string
	subscribers int
	rate        int
	duration    time.Duration
	publishTo   int
	publishers  int
	maxBatch    int
	size        int
	drain       time.Duration
	timeout     time.Duration
}

// commits is how many commits the run publishes.
func (c config) commits() int {
	return int(math.Round(float64(c.rate) * c.duration.Seconds()))
}

// flags is the command line's flag set, writing into c; servers is the
// raw -servers.
func flags(c *config, servers *string) *flag.FlagSet {
	fs := flag.NewFlagSet("fanbench", flag.ContinueOnError)
	fs.StringVar(servers, "servers", "", "the replicas: comma-separated http:// URLs on 127.0.0.0/8")
	fs.IntVar(&c.subscribers, "subscribers", 100, "SSE subscribers over all replicas, dealt out in turn")
	fs.IntVar(&c.rate, "rate", 5000, "commits offered per second")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to publish")
	fs.IntVar(&c.publishTo, "publish-to", 0, "the replica (0-based index in -servers) the commits are published to")
	fs.IntVar(&c.publishers, "publishers", 1, "PublishBatch requests in flight at once")
	fs.IntVar(&c.maxBatch, "max-batch", 1024, "commits per PublishBatch request at most (1 to 1024)")
	fs.IntVar(&c.size, "size", 100, "bytes of each commit's data object, about")
	fs.DurationVar(&c.drain, "drain", 10*time.Second, "how long to wait after the last publish for deliveries to stop arriving")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "the whole run's bound")
	return fs
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	var servers string
	if err := benchkit.ParseFlags(flags(&c, &servers), args, stderr); err != nil {
		return c, err
	}
	if servers == "" {
		return c, errors.New("-servers is required: the replicas' URLs, comma-separated")
	}
	for s := range strings.SplitSeq(servers, ",") {
		s = strings.TrimRight(strings.TrimSpace(s), "/")
		if err := loopbackURL(s); err != nil {
			return c, err
		}
		c.servers = append(c.servers, s)
	}
	switch {
	case c.subscribers < 1 || c.subscribers > 10000:
		return c, fmt.Errorf("-subscribers must be 1 to 10000, not %d", c.subscribers)
	case c.rate < 1 || c.rate > 1_000_000:
		return c, fmt.Errorf("-rate must be 1 to 1000000 commits/s, not %d", c.rate)
	case c.duration <= 0 || c.duration > 10*time.Minute:
		return c, fmt.Errorf("-duration must be positive and at most 10m, not %s", c.duration)
	case c.publishTo < 0 || c.publishTo >= len(c.servers):
		return c, fmt.Errorf("-publish-to must be 0 to %d (an index in -servers), not %d", len(c.servers)-1, c.publishTo)
	case c.publishers < 1 || c.publishers > 64:
		return c, fmt.Errorf("-publishers must be 1 to 64, not %d", c.publishers)
	case c.maxBatch < 1 || c.maxBatch > 1024:
		return c, fmt.Errorf("-max-batch must be 1 to 1024, not %d", c.maxBatch)
	case c.size < 0 || c.size > 65536:
		return c, fmt.Errorf("-size must be 0 to 65536 bytes, not %d", c.size)
	case c.drain <= 0 || c.timeout <= 0:
		return c, errors.New("-drain and -timeout must be positive")
	case c.commits() < 1:
		return c, errors.New("-rate × -duration is less than one commit")
	case c.commits() > 50_000_000:
		return c, fmt.Errorf("-rate × -duration is %d commits, more than 50000000", c.commits())
	}
	return c, nil
}

// loopbackURL refuses a server URL that is not http:// on a 127.0.0.0/8
// address: fanbench sends too much to point at anything else.
func loopbackURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("-servers: want http://127.x.x.x:port URLs, not %q", s)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		return fmt.Errorf("-servers: %q is not a 127.0.0.0/8 address", u.Hostname())
	}
	return nil
}

// Result is the run's report, printed as JSON.
type Result struct {
	Replicas          int                `json:"replicas"`
	Subscribers       int                `json:"subscribers"`
	OfferedRate       int                `json:"offered_rate"`
	Publish           PublishResult      `json:"publish"`
	Expected          int64              `json:"expected_deliveries"`
	Deliveries        int64              `json:"deliveries"`
	Lost              int64              `json:"lost"`
	Duplicated        int64              `json:"duplicated"`
	OutOfOrder        int64              `json:"out_of_order"`
	WindowS           float64            `json:"window_s"`
	DeliveriesPerS    float64            `json:"deliveries_per_s"`
	PerReplica        []ReplicaResult    `json:"per_replica"`
	Latency           benchkit.Quantiles `json:"publish_to_deliver_ms"`
	ToolCPUS          float64            `json:"fanbench_cpu_s"`   // fanbench's own, publishing and draining
	MachineBusy       float64            `json:"machine_busy_pct"` // all CPUs, every process (Linux; 0 elsewhere)
	CPUs              int                `json:"cpus"`
	SubscribersFailed int                `json:"subscribers_failed"`
	FirstError        string             `json:"first_error,omitempty"`
}

// PublishResult is the publisher's side.
type PublishResult struct {
	To           string  `json:"to"`
	Commits      int     `json:"commits"`
	Requests     int     `json:"requests"`
	Failed       int     `json:"failed_requests"`
	AchievedRate float64 `json:"achieved_rate"`
	FirstError   string  `json:"first_error,omitempty"`
}

// ReplicaResult is one replica's share.
type ReplicaResult struct {
	Server         string  `json:"server"`
	Subscribers    int     `json:"subscribers"`
	Deliveries     int64   `json:"deliveries"`
	DeliveriesPerS float64 `json:"deliveries_per_s"`
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	res, err := bench(ctx, c)
	if res != nil {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(stdout, string(b))
	}
	return err
}

// runTopic is a topic of the run's own: subscribers filter on it, so
// other commits on the stream are not counted.
func runTopic() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "fanbench/" + hex.EncodeToString(b[:])
}

func bench(ctx context.Context, c config) (*Result, error) {
	topic := runTopic()
	n := c.commits()
	tr := &http.Transport{MaxIdleConnsPerHost: c.publishers + 2, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	subs := make([]*subscriber, c.subscribers)
	caught := make(chan struct{}, c.subscribers)
	var wg sync.WaitGroup
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	for i := range subs {
		s := newSubscriber(c.servers[i%len(c.servers)], n, c.publishers == 1)
		subs[i] = s
		wg.Go(func() { s.run(subCtx, client, topic, caught) })
	}
	stop := func() {
		stopSubs()
		wg.Wait()
	}
	// Every subscriber caught up (or failed) before the first publish.
	for range subs {
		select {
		case <-caught:
		case <-ctx.Done():
			stop()
			return nil, errors.New("the subscribers did not all catch up within -timeout")
		}
	}
	var failed []error
	for _, s := range subs {
		if err := s.failure(); err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		stop()
		return nil, fmt.Errorf("%d of %d subscribers failed; the first: %w", len(failed), len(subs), failed[0])
	}

	cpu0 := benchkit.CPUTime()
	busy0, total0 := machineTicks()
	pub := publish(ctx, client, c, topic)
	drain(ctx, subs, int64(n), c.drain)
	cpu1 := benchkit.CPUTime()
	busy1, total1 := machineTicks()
	stop()

	res := &Result{Replicas: len(c.servers), Subscribers: c.subscribers, OfferedRate: c.rate, Publish: pub.PublishResult,
		ToolCPUS: benchkit.Round((cpu1 - cpu0).Seconds(), 2), CPUs: runtime.NumCPU()}
	if total1 > total0 {
		res.MachineBusy = benchkit.Round(100*(busy1-busy0)/(total1-total0), 1)
	}
	var h benchkit.Hist
	var last time.Time
	per := map[string]*ReplicaResult{}
	for _, srv := range c.servers {
		res.PerReplica = append(res.PerReplica, ReplicaResult{Server: srv})
	}
	for i := range res.PerReplica {
		per[res.PerReplica[i].Server] = &res.PerReplica[i]
	}
	for _, s := range subs {
		s.mu.Lock()
		res.Deliveries += s.received
		res.Duplicated += s.duplicated
		res.OutOfOrder += s.outOfOrder
		res.Expected += int64(pub.Commits)
		r := per[s.server]
		r.Subscribers++
		r.Deliveries += s.received
		h.Merge(&s.hist)
		if s.last.After(last) {
			last = s.last
		}
		if s.err != nil && !errors.Is(s.err, context.Canceled) {
			res.SubscribersFailed++
			if res.FirstError == "" {
				res.FirstError = s.err.Error()
			}
		}
		s.mu.Unlock()
	}
	res.Lost = res.Expected - res.Deliveries
	window := last.Sub(pub.start)
	if window > 0 {
		res.WindowS = benchkit.Round(window.Seconds(), 3)
		res.DeliveriesPerS = math.Round(float64(res.Deliveries) / window.Seconds())
		for i := range res.PerReplica {
			res.PerReplica[i].DeliveriesPerS = math.Round(float64(res.PerReplica[i].Deliveries) / window.Seconds())
		}
	}
	res.Latency = h.Quantiles()
	var err error
	switch {
	case pub.Failed > 0:
		err = fmt.Errorf("%d publish requests failed; the first: %s", pub.Failed, pub.FirstError)
	case res.Lost > 0 || res.Duplicated > 0:
		err = fmt.Errorf("%d deliveries lost and %d duplicated", res.Lost, res.Duplicated)
	case res.SubscribersFailed > 0:
		err = fmt.Errorf("%d subscribers failed; the first: %s", res.SubscribersFailed, res.FirstError)
	}
	return res, err
}

// publishResult is the publisher's side, with when it started.
type publishResult struct {
	PublishResult
	start time.Time
}

// publish sends the run's commits in PublishBatch requests at the offered
// rate: each request holds every commit due and not yet sent, up to
// -max-batch, and -publishers requests are in flight at most.
func publish(ctx context.Context, client *http.Client, c config, topic string) publishResult {
	n := c.commits()
	endpoint := c.servers[c.publishTo] + "/ringcast.v1.EventService/PublishBatch"
	pad := strings.Repeat("x", max(c.size-40, 0))
	var mu sync.Mutex
	next := 0 // the next commit index to send
	res := publishResult{PublishResult: PublishResult{To: c.servers[c.publishTo]}}
	start := time.Now()
	res.start = start
	every := time.Second / time.Duration(c.rate)
	// claim takes the commits due now, waiting for the next one when none is.
	claim := func() (from, to int, ok bool) {
		for {
			mu.Lock()
			if next >= n {
				mu.Unlock()
				return 0, 0, false
			}
			due := min(int(time.Since(start)/every)+1, n)
			if due > next {
				from, to = next, min(due, next+c.maxBatch)
				next = to
				mu.Unlock()
				return from, to, true
			}
			wait := time.Until(start.Add(time.Duration(next) * every))
			mu.Unlock()
			select {
			case <-ctx.Done():
				return 0, 0, false
			case <-time.After(max(wait, 50*time.Microsecond)):
			}
		}
	}
	var wg sync.WaitGroup
	for range c.publishers {
		wg.Go(func() {
			var b bytes.Buffer
			for {
				from, to, ok := claim()
				if !ok {
					return
				}
				b.Reset()
				sent := time.Now().UnixNano()
				b.WriteString(`{"commits":[`)
				for i := from; i < to; i++ {
					if i > from {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"facts":[{"topic":%q,"type":"fanbench","data":{"idx":"%d","sent_ns":"%d","pad":"%s"}}]}`, topic, i, sent, pad)
				}
				b.WriteString(`]}`)
				err := postBatch(ctx, client, endpoint, b.Bytes())
				mu.Lock()
				res.Requests++
				if err != nil {
					res.Failed++
					if res.FirstError == "" {
						res.FirstError = err.Error()
					}
				} else {
					res.Commits += to - from
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.AchievedRate = math.Round(float64(res.Commits) / time.Since(start).Seconds())
	return res
}

func postBatch(ctx context.Context, client *http.Client, endpoint string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PublishBatch: %s: %s", resp.Status, bytes.TrimSpace(b[:min(len(b), 512)]))
	}
	return nil
}

// drain waits until every subscriber has every commit, or until none has
// received anything for -drain.
func drain(ctx context.Context, subs []*subscriber, want int64, idle time.Duration) {
	var lastTotal int64 = -1
	lastMove := time.Now()
	for ctx.Err() == nil {
		var total int64
		done := true
		for _, s := range subs {
			r := s.count.Load()
			total += r
			if r < want && !s.ended.Load() {
				done = false
			}
		}
		if done {
			return
		}
		if total != lastTotal {
			lastTotal, lastMove = total, time.Now()
		} else if time.Since(lastMove) > idle {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// subscriber is one SSE stream and what it received.
type subscriber struct {
	server  string
	ordered bool // one publisher: the commits' indexes rise with their seqs
	count   atomic.Int64
	ended   atomic.Bool

	mu         sync.Mutex
	seen       []uint64 // a bit per commit index
	received   int64
	duplicated int64
	outOfOrder int64
	lastSeq    uint64
	lastIdx    int
	last       time.Time // the latest delivery
	hist       benchkit.Hist
	err        error
}

func newSubscriber(server string, commits int, ordered bool) *subscriber {
	return &subscriber{server: server, ordered: ordered, seen: make([]uint64, (commits+63)/64), lastIdx: -1}
}

func (s *subscriber) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

var (
	idPrefix       = []byte("id: ")
	caughtUpPrefix = []byte("event: caught-up")
	gapPrefix      = []byte("event: gap")
	dataPrefix     = []byte("data: ")
	idxKey         = []byte(`"idx":"`)
	sentKey        = []byte(`"sent_ns":"`)
)

// run reads the stream until ctx ends or the stream fails; caught gets
// one value once it is caught up or has failed.
func (s *subscriber) run(ctx context.Context, client *http.Client, topic string, caught chan<- struct{}) {
	signalled := false
	signal := func() {
		if !signalled {
			signalled = true
			caught <- struct{}{}
		}
	}
	defer signal()
	defer s.ended.Store(true)
	err := s.read(ctx, client, topic, signal)
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *subscriber) read(ctx context.Context, client *http.Client, topic string, caughtUp func()) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.server+"/events?topic="+url.QueryEscape(topic), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s: %s", s.server, resp.Status, bytes.TrimSpace(b))
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var seq uint64
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return fmt.Errorf("%s: an SSE line longer than 64 KiB", s.server)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: the stream ended: %w", s.server, err)
		}
		switch {
		case bytes.HasPrefix(line, idPrefix):
			seq = parseSeq(line[len(idPrefix):])
		case bytes.HasPrefix(line, caughtUpPrefix):
			caughtUp()
		case bytes.HasPrefix(line, gapPrefix):
			return fmt.Errorf("%s: a gap event: the stream skipped commits", s.server)
		case bytes.HasPrefix(line, dataPrefix):
			idx, okI := field(line, idxKey)
			sent, okS := field(line, sentKey)
			if okI && okS {
				s.deliver(seq, int(idx), sent, time.Now())
			}
		}
	}
}

func (s *subscriber) deliver(seq uint64, idx int, sentNs int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idx < 0 || idx >= len(s.seen)*64 {
		return
	}
	if s.seen[idx/64]&(1<<(idx%64)) != 0 {
		s.duplicated++
		return
	}
	s.seen[idx/64] |= 1 << (idx % 64)
	if seq <= s.lastSeq || (s.ordered && idx < s.lastIdx) {
		s.outOfOrder++
	}
	s.lastSeq, s.lastIdx = seq, idx
	s.received++
	s.count.Add(1)
	s.last = now
	s.hist.Add(now.Sub(time.Unix(0, sentNs)))
}

// parseSeq is the seq of an SSE id, epoch-seq or epoch-seq-fingerprint
// (0 when it is neither).
func parseSeq(id []byte) uint64 {
	_, rest, ok := bytes.Cut(bytes.TrimSpace(id), []byte("-"))
	if !ok {
		return 0
	}
	digits, _, _ := bytes.Cut(rest, []byte("-"))
	v, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// field is the decimal string value of key ("name":") in line.
func field(line, key []byte) (int64, bool) {
	i := bytes.Index(line, key)
	if i < 0 {
		return 0, false
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return v, err == nil
}

// machineTicks is the machine's busy and total CPU time so far, in clock
// ticks, from /proc/stat's first line (zeros where it cannot be read).
func machineTicks() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		total += x
		if i != 3 && i != 4 { // idle, iowait
			busy += x
		}
	}
	return busy, total
}
