package loadgen

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

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

	Commits       int64   `json:"commits"`
	CommitsPerS   float64 `json:"commits_per_s"`
	PublishErrors int64   `json:"publish_errors"`
	// Deliveries counts the run's own commits received by the streams
	// (those whose topic is under the run's, "load/<run>").
	Deliveries     int64   `json:"deliveries"`
	DeliveriesPerS float64 `json:"deliveries_per_s"`
	// DeliveredRatio is deliveries / (commits × subscribers) over the
	// window; near 1 when the streams keep up.
	DeliveredRatio float64 `json:"delivered_ratio"`
	// OtherDeliveries counts commits of other publishers (the demo feed,
	// another run) received over the window: checked for gaps, counted
	// in neither deliveries nor latency.
	OtherDeliveries int64 `json:"other_deliveries,omitempty"`

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

func runFanout(ctx context.Context, cfg Config, stderr io.Writer) (*FanoutResult, error) {
	var cs clients
	defer cs.close()
	scrape, st, rpcs, err := cs.open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := scrape(ctx); err != nil {
		return nil, err
	}
	maxLead := uint64(cfg.MaxLead)
	if maxLead == 0 {
		maxLead = max(uint64(st.Window)/2, 1)
	}
	if maxLead >= uint64(st.Window) {
		return nil, fmt.Errorf("--max-lead %d must be below the server's window (%d), or streams are cut for lagging", maxLead, st.Window)
	}
	r := &loadRun{cfg: cfg, epoch: st.InstanceEpoch, prefix: ownTopicPrefix()}
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
		cfg.Subscribers, cfg.Protocol, cfg.Connections, cfg.Server, st.HeadSeq, st.Window)
	if err := r.openStreams(subCtx, cfg.Subscribers, rpcs, st.HeadSeq, &subWG); err != nil {
		return nil, err
	}

	pubCtx, stopPubs := context.WithCancel(subCtx)
	var pubWG sync.WaitGroup
	defer func() { stopPubs(); pubWG.Wait() }()
	pubWG.Add(1)
	go func() { defer pubWG.Done(); r.trackSlowest(pubCtx) }()
	pub := cs.rpc(cfg, cfg.Publishers+1) // its own connections, apart from the streams'
	for i := range cfg.Publishers {
		pubWG.Add(1)
		go func() { defer pubWG.Done(); r.publish(pubCtx, i, pub, maxLead) }()
	}
	if cfg.Progress > 0 {
		pubWG.Add(1)
		go func() { defer pubWG.Done(); r.reportProgress(pubCtx, stderr) }()
	}
	fmt.Fprintf(stderr, "load: all streams live; publishing (rate %s, %d publishers), warmup %v\n", rateString(cfg.Rate), cfg.Publishers, cfg.Warmup)

	interrupted := !sleepCtx(ctx, cfg.Warmup)
	if interrupted {
		return nil, fmt.Errorf("interrupted before the measured window: %w", context.Cause(ctx))
	}
	before, err := scrape(ctx)
	if err != nil {
		return nil, err
	}
	toolCPU0, toolOK := ownCPUSeconds()
	d0, c0, o0, t0 := r.deliveries(), r.published.Load(), r.otherCommits(), time.Now()
	r.measuring.Store(true)
	fmt.Fprintf(stderr, "load: measuring for %v\n", cfg.Duration)
	interrupted = !sleepCtx(ctx, cfg.Duration)
	r.measuring.Store(false)
	d1, c1, o1, t1 := r.deliveries(), r.published.Load(), r.otherCommits(), time.Now()
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
		Mode: "fanout", Server: cfg.Server, Protocol: string(cfg.Protocol),
		Subscribers: cfg.Subscribers, Connections: cfg.Connections, Publishers: cfg.Publishers,
		RateTarget: cfg.Rate, MaxLead: maxLead, WarmupS: cfg.Warmup.Seconds(), DurationS: round(secs, 3),
		Interrupted: interrupted,
		Commits:     commits, CommitsPerS: round(float64(commits)/secs, 1), PublishErrors: r.publishErrs.Load(),
		Deliveries: deliveries, DeliveriesPerS: round(float64(deliveries)/secs, 0), OtherDeliveries: o1 - o0,
		GapViolations: r.gaps(), Errors: r.errors(), FirstError: r.firstErr, BehindAtEnd: behind,
		ServerAfter: after,
	}
	if commits > 0 {
		res.DeliveredRatio = round(float64(deliveries)/float64(commits*int64(cfg.Subscribers)), 4)
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
	t := time.NewTicker(r.cfg.Progress)
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
