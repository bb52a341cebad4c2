package loadgen

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

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

func runIdle(ctx context.Context, cfg Config, stderr io.Writer) (*IdleResult, error) {
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
	if cfg.Protocol == ProtocolSSE {
		r.sse = ringcast.NewHTTPClient(ringcast.ProtocolConnect) // HTTP/1.1, a connection per stream
		cs = append(cs, r.sse)
	}
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
	fmt.Fprintf(stderr, "load: opening %d idle %s streams over %d connections to %s\n", cfg.Idle, cfg.Protocol, cfg.Connections, cfg.Server)
	if err := r.openStreams(subCtx, cfg.Idle, rpcs, st.HeadSeq, &subWG); err != nil {
		return nil, err
	}
	// Wait for the server to count them all.
	want := before.Subscribers + float64(cfg.Idle)
	deadline := time.Now().Add(cfg.Ready)
	for {
		m, err := scrape(ctx)
		if err != nil {
			return nil, err
		}
		if m.Subscribers >= want {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the server counts %.0f subscribers, want %.0f, after --ready-timeout %v", m.Subscribers, want, cfg.Ready)
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return nil, context.Cause(ctx)
		}
	}
	fmt.Fprintf(stderr, "load: the server counts all %d streams; measuring\n", cfg.Idle)
	if !sleepCtx(ctx, 500*time.Millisecond) {
		return nil, context.Cause(ctx)
	}
	after, err := scrapeMedian(ctx, scrape)
	if err != nil {
		return nil, err
	}
	n := float64(cfg.Idle)
	res := &IdleResult{
		Mode: "idle", Server: cfg.Server, Protocol: string(cfg.Protocol), Idle: cfg.Idle, Connections: cfg.Connections,
		Before: before, After: after,
		RSSPerStream:        round((after.RSSBytes-before.RSSBytes)/n, 0),
		HeapPerStream:       round((after.HeapInuseBytes-before.HeapInuseBytes)/n, 0),
		StackPerStream:      round((after.StackBytes-before.StackBytes)/n, 0),
		GoroutinesPerStream: round((after.Goroutines-before.Goroutines)/n, 2),
		Errors:              r.errors(), FirstError: r.firstErr,
	}
	fmt.Fprintf(stderr, "load: per idle stream: RSS %.0f B, heap in use %.0f B, stacks %.0f B\n",
		res.RSSPerStream, res.HeapPerStream, res.StackPerStream)
	if cfg.Hold > 0 {
		fmt.Fprintf(stderr, "load: holding the %d streams open for %v\n", cfg.Idle, cfg.Hold)
		sleepCtx(ctx, cfg.Hold) // SIGINT ends the hold early; the figures stand
	}
	return res, nil
}
