// Command idlebench opens many idle SSE streams on a ringcast server over
// loopback and measures what they cost the server and how it serves them:
// its RSS per stream, the heartbeats every stream receives, and how long
// one commit takes to reach all of them (docs/performance.md, "Many idle
// streams on one box").
//
// One process cannot open more streams than its open-file limit, nor one
// source address more than the ephemeral ports of one (source, server)
// pair, so idlebench spreads the streams over -procs worker processes (it
// runs itself with -worker) and over -sources loopback addresses
// (127.0.0.2, 127.0.0.3, ...). It only talks to a loopback server, from
// loopback addresses, and every step is bounded by -timeout.
//
//	go run ./tools/idlebench -server http://127.0.0.1:18080 -streams 100000 -procs 5 -sources 8 -pid $P
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ringcast/ringcast/tools/internal/benchkit"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "idlebench:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	server    string
	streams   int
	procs     int
	sources   int
	conc      int
	pid       int
	heartbeat time.Duration
	hold      time.Duration
	settle    time.Duration
	timeout   time.Duration
	worker    bool
	from      string // -worker: the source addresses, comma-separated
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("idlebench", flag.ContinueOnError)
	fs.StringVar(&c.server, "server", "http://127.0.0.1:8080", "the ringcast server's URL (a 127.0.0.0/8 address)")
	fs.IntVar(&c.streams, "streams", 1000, "idle SSE streams to open, over all processes")
	fs.IntVar(&c.procs, "procs", 1, "worker processes the streams are spread over (each has its own open-file limit)")
	fs.IntVar(&c.sources, "sources", 1, "source addresses the streams are spread over: 127.0.0.2 and up (each gives about the ephemeral port range's worth of connections)")
	fs.IntVar(&c.conc, "conc", 200, "connections each worker opens at once")
	fs.IntVar(&c.pid, "pid", 0, "the server's process id, to read its RSS from /proc (0: not measured)")
	fs.DurationVar(&c.heartbeat, "heartbeat", 15*time.Second, "the server's --heartbeat: a gap between two heartbeats longer than 1.25 times it is counted late")
	fs.DurationVar(&c.hold, "hold", 0, "how long the streams stay open after the commit, for their heartbeats (0: 2.5 × -heartbeat)")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "pause after every stream is open, before the RSS is read")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "the whole run's bound")
	fs.BoolVar(&c.worker, "worker", false, "run as a worker (idlebench starts its workers itself)")
	fs.StringVar(&c.from, "from", "", "-worker: the source addresses, comma-separated")
	if err := benchkit.ParseFlags(fs, args, stderr); err != nil {
		return c, err
	}
	if c.hold == 0 {
		c.hold = c.heartbeat * 5 / 2
	}
	switch {
	case c.streams < 1:
		return c, errors.New("-streams must be at least 1")
	case c.procs < 1 || c.procs > 64:
		return c, errors.New("-procs must be 1 to 64")
	case c.sources < 1 || c.sources > 250:
		return c, errors.New("-sources must be 1 to 250 (127.0.0.2 to 127.0.0.251)")
	case c.conc < 1:
		return c, errors.New("-conc must be at least 1")
	case c.heartbeat <= 0 || c.hold < 0 || c.settle < 0 || c.timeout <= 0:
		return c, errors.New("-heartbeat and -timeout must be positive, -hold and -settle not negative")
	}
	if _, err := loopbackHost(c.server); err != nil {
		return c, err
	}
	return c, nil
}

// loopbackHost returns the host:port of a server URL whose host is a
// 127.0.0.0/8 address: idlebench opens too many connections to point at
// anything else.
func loopbackHost(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("-server must be an http:// URL, not %q", server)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("-server must be a 127.0.0.0/8 address, not %q", u.Hostname())
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(ip.String(), port), nil
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if c.worker {
		return work(ctx, c, stdin, stdout)
	}
	res, err := coordinate(ctx, c, stderr)
	if res != nil {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(stdout, string(b))
	}
	return err
}

// sourceAddr is the i-th source address: 127.0.0.2 and up.
func sourceAddr(i int) string { return "127.0.0." + strconv.Itoa(2+i) }

// Result is the run's report, printed as JSON.
type Result struct {
	Streams         int     `json:"streams"`
	Opened          int     `json:"opened"`
	Failed          int     `json:"failed"`
	FirstError      string  `json:"first_error,omitempty"`
	Procs           int     `json:"procs"`
	Sources         int     `json:"sources"`
	OpenSeconds     float64 `json:"open_seconds"`
	RSSBeforeKiB    int64   `json:"server_rss_before_kib,omitempty"`
	RSSOpenKiB      int64   `json:"server_rss_open_kib,omitempty"`
	BytesPerStream  float64 `json:"server_rss_bytes_per_stream,omitempty"`
	CommitReached   int     `json:"commit_reached"`
	CommitP50ms     float64 `json:"commit_p50_ms"`
	CommitP99ms     float64 `json:"commit_p99_ms"`
	CommitMaxms     float64 `json:"commit_max_ms"`
	Heartbeats      int64   `json:"heartbeats"`
	StreamsBeaten   int     `json:"streams_with_a_heartbeat"`
	HeartbeatGapP50 float64 `json:"heartbeat_gap_p50_s"`
	HeartbeatGapP99 float64 `json:"heartbeat_gap_p99_s"`
	HeartbeatGapMax float64 `json:"heartbeat_gap_max_s"`
	LateGaps        int     `json:"heartbeat_gaps_late"`
	Ended           int     `json:"streams_ended_early"`
}

// report is one worker's, one JSON line on its stdout.
type report struct {
	Opened     int       `json:"opened"`
	Failed     int       `json:"failed"`
	FirstError string    `json:"first_error,omitempty"`
	Latency    []float64 `json:"latency_ms"` // per stream that received the commit
	Heartbeats int64     `json:"heartbeats"`
	Beaten     int       `json:"beaten"`
	Gaps       []float64 `json:"gaps_s"` // per stream: its longest gap between two heartbeats, or since the commit
	Ended      int       `json:"ended"`
}

type proc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
}

func coordinate(ctx context.Context, c config, stderr io.Writer) (*Result, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	res := &Result{Streams: c.streams, Procs: c.procs, Sources: c.sources}
	res.RSSBeforeKiB = rssKiB(c.pid)
	procs := make([]*proc, 0, c.procs)
	defer func() {
		for _, p := range procs {
			_ = p.in.Close()
			_ = p.cmd.Wait()
		}
	}()
	t0 := time.Now()
	for i := range c.procs {
		n := c.streams / c.procs
		if i < c.streams%c.procs {
			n++
		}
		var from []string
		for j := range c.sources {
			from = append(from, sourceAddr(j))
		}
		// Each worker starts at another address, so a few streams per
		// worker still spread over them.
		k := i % len(from)
		from = append(from[k:], from[:k]...)
		cmd := exec.CommandContext(ctx, self, "-worker", "-server", c.server, "-streams", strconv.Itoa(n),
			"-from", strings.Join(from, ","), "-conc", strconv.Itoa(c.conc), "-heartbeat", c.heartbeat.String(),
			"-timeout", c.timeout.String())
		cmd.Stderr = stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		procs = append(procs, &proc{cmd: cmd, in: in, lines: sc})
	}
	// Every worker says "open <n>" once its streams are open and caught up.
	for _, p := range procs {
		if _, err := expect(p, "open"); err != nil {
			return res, err
		}
	}
	res.OpenSeconds = round(time.Since(t0).Seconds(), 2)
	fmt.Fprintf(stderr, "idlebench: streams open after %.1fs; settling %v\n", res.OpenSeconds, c.settle)
	time.Sleep(c.settle)
	if c.pid > 0 {
		var rs []int64
		for range 3 {
			rs = append(rs, rssKiB(c.pid))
			time.Sleep(time.Second)
		}
		slices.Sort(rs)
		res.RSSOpenKiB = rs[1]
	}
	sent := time.Now()
	if err := publishProbe(ctx, c.server, sent); err != nil {
		return res, err
	}
	for _, p := range procs {
		if _, err := expect(p, "commit"); err != nil {
			return res, err
		}
	}
	fmt.Fprintf(stderr, "idlebench: the commit reached every worker's streams after %v; holding %v for heartbeats\n",
		time.Since(sent).Round(time.Millisecond), c.hold)
	select {
	case <-time.After(c.hold):
	case <-ctx.Done():
		return res, fmt.Errorf("-timeout %v before the hold ended", c.timeout)
	}
	var lat, gaps []float64
	for _, p := range procs {
		if _, err := io.WriteString(p.in, "report\n"); err != nil {
			return res, err
		}
		line, err := expect(p, "report")
		if err != nil {
			return res, err
		}
		var r report
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return res, fmt.Errorf("worker report: %w", err)
		}
		res.Opened += r.Opened
		res.Failed += r.Failed
		if res.FirstError == "" {
			res.FirstError = r.FirstError
		}
		res.Heartbeats += r.Heartbeats
		res.StreamsBeaten += r.Beaten
		res.Ended += r.Ended
		lat = append(lat, r.Latency...)
		gaps = append(gaps, r.Gaps...)
	}
	if res.RSSOpenKiB > 0 && res.Opened > 0 {
		res.BytesPerStream = round(float64(res.RSSOpenKiB-res.RSSBeforeKiB)*1024/float64(res.Opened), 0)
	}
	res.CommitReached = len(lat)
	slices.Sort(lat)
	res.CommitP50ms, res.CommitP99ms, res.CommitMaxms = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 1)
	slices.Sort(gaps)
	res.HeartbeatGapP50, res.HeartbeatGapP99, res.HeartbeatGapMax = quantile(gaps, 0.5), quantile(gaps, 0.99), quantile(gaps, 1)
	for _, g := range gaps {
		if g > 1.25*c.heartbeat.Seconds() {
			res.LateGaps++
		}
	}
	return res, nil
}

// expect reads the worker's next line, which must start with word; it
// returns the rest.
func expect(p *proc, word string) (string, error) {
	if !p.lines.Scan() {
		err := p.lines.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return "", fmt.Errorf("worker (waiting for %q): %w", word, err)
	}
	line := p.lines.Text()
	rest, ok := strings.CutPrefix(line, word)
	if !ok {
		return "", fmt.Errorf("worker said %q, want %q", line, word)
	}
	return strings.TrimSpace(rest), nil
}

// publishProbe publishes the one commit every stream must receive, its
// data carrying when it was sent (Unix nanoseconds).
func publishProbe(ctx context.Context, server string, at time.Time) error {
	body := fmt.Sprintf(`{"facts":[{"topic":"idlebench/probe","type":"probe","data":{"sent_ns":"%d"}}]}`, at.UnixNano())
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(server, "/")+"/ringcast.v1.EventService/Publish", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("publish: %s: %s", resp.Status, b)
	}
	return nil
}

// rssKiB is the process's resident set (VmRSS), 0 when unknown.
func rssKiB(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return round(sorted[i], 3)
}

func round(v float64, d int) float64 {
	p := 1.0
	for range d {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// sub is one stream, read on its own goroutine.
type sub struct {
	mu       sync.Mutex
	caught   bool
	latency  float64 // ms; < 0: the commit has not arrived
	lastBeat time.Time
	maxGap   time.Duration
	beats    int64
	ended    bool
}

func work(ctx context.Context, c config, stdin io.Reader, stdout io.Writer) error {
	addr, err := loopbackHost(c.server)
	if err != nil {
		return err
	}
	var from []*net.TCPAddr
	for s := range strings.SplitSeq(c.from, ",") {
		ip := net.ParseIP(s)
		if ip == nil || ip.To4() == nil || !ip.IsLoopback() {
			return fmt.Errorf("-from: %q is not a 127.0.0.0/8 address", s)
		}
		from = append(from, &net.TCPAddr{IP: ip})
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && uint64(c.streams)+32 > rl.Cur {
		return fmt.Errorf("%d streams need more than this process's open-file limit of %d (ulimit -n): use more -procs", c.streams, rl.Cur)
	}
	req := []byte("GET /events HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\n\r\n")
	subs := make([]*sub, c.streams)
	var (
		mu       sync.Mutex
		failed   int
		firstErr string
		conns    []net.Conn
		wg       sync.WaitGroup
	)
	caught := make(chan struct{}, c.streams)
	commits := make(chan struct{}, c.streams)
	sem := make(chan struct{}, c.conc)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failed++
		if firstErr == "" {
			firstErr = err.Error()
		}
	}
	defer func() {
		mu.Lock()
		for _, cn := range conns {
			_ = cn.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for i := range subs {
		s := &sub{latency: -1}
		subs[i] = s
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		d := net.Dialer{LocalAddr: from[i%len(from)], Timeout: 30 * time.Second}
		cn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			<-sem
			fail(err)
			caught <- struct{}{}
			continue
		}
		mu.Lock()
		conns = append(conns, cn)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			released := false
			release := func() {
				if !released {
					released = true
					<-sem
					caught <- struct{}{}
				}
			}
			defer release()
			if _, err := cn.Write(req); err != nil {
				fail(err)
				return
			}
			err := s.read(cn, release, commits)
			if !released {
				fail(fmt.Errorf("before caught-up: %w", err))
			}
			s.mu.Lock()
			s.ended = true
			s.mu.Unlock()
		}()
	}
	for range subs {
		select {
		case <-caught:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	mu.Lock()
	opened := len(subs) - failed
	mu.Unlock()
	fmt.Fprintf(stdout, "open %d\n", opened)
	// Every stream that opened must receive the commit.
	for range opened {
		select {
		case <-commits:
		case <-time.After(time.Minute):
			fmt.Fprintf(stdout, "commit missing\n")
			goto report
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Fprintf(stdout, "commit all\n")
report:
	in := bufio.NewScanner(stdin)
	if !in.Scan() || in.Text() != "report" {
		return errors.New("no report asked for")
	}
	r := report{Opened: opened, Failed: failed, FirstError: firstErr}
	now := time.Now()
	for _, s := range subs {
		s.mu.Lock()
		if s.latency >= 0 {
			r.Latency = append(r.Latency, s.latency)
		}
		r.Heartbeats += s.beats
		if s.beats > 0 {
			r.Beaten++
		}
		if s.caught {
			gap := max(s.maxGap, now.Sub(s.lastBeat))
			r.Gaps = append(r.Gaps, gap.Seconds())
		}
		if s.ended && s.caught {
			r.Ended++
		}
		s.mu.Unlock()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "report %s\n", b)
	return err
}

var (
	caughtUpLine = []byte("event: caught-up")
	heartbeat    = []byte(": heartbeat")
	sentKey      = []byte(`"sent_ns":"`)
)

// read reads one stream until its connection ends: caughtUp is called once
// its caught-up event arrived; each heartbeat comment and the probe
// commit are recorded.
func (s *sub) read(cn net.Conn, caughtUp func(), commits chan<- struct{}) error {
	br := bufio.NewReaderSize(cn, 1024)
	// A stream the server turned away (a connection cap, a stream cap)
	// says why in its response's body: that is the stream's error.
	// The head is read as HTTP; a 200's body, the events, straight from
	// br (the SSE face sends it unchunked).
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
		now := time.Now()
		switch {
		case bytes.HasPrefix(line, caughtUpLine):
			s.mu.Lock()
			s.caught, s.lastBeat = true, now // the gap to the first heartbeat counts from here
			s.mu.Unlock()
			caughtUp()
		case bytes.HasPrefix(line, heartbeat):
			s.mu.Lock()
			if s.caught {
				s.maxGap = max(s.maxGap, now.Sub(s.lastBeat))
				s.lastBeat = now
			}
			s.beats++
			s.mu.Unlock()
		default:
			if i := bytes.Index(line, sentKey); i >= 0 {
				rest := line[i+len(sentKey):]
				if j := bytes.IndexByte(rest, '"'); j > 0 {
					if ns, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
						s.mu.Lock()
						first := s.latency < 0
						if first {
							s.latency = float64(now.UnixNano()-ns) / 1e6
							// A commit is a send: the next heartbeat is
							// due a heartbeat interval after it.
							s.maxGap = max(s.maxGap, now.Sub(s.lastBeat))
							s.lastBeat = now
						}
						s.mu.Unlock()
						if first {
							commits <- struct{}{}
						}
					}
				}
			}
		}
	}
}
