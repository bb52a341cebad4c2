// Package loadgen drives a running ringcast server over loopback and
// measures the server from outside: fan-out (subscribers that check every
// seq arrives once, publishers at a paced rate) or idle streams, with the
// server's CPU and memory read from its own /metrics before and after the
// measured window. `ringcast load` parses its flags into a Config and calls
// Run.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

// Config is one run's configuration; the fields mirror the flags of
// `ringcast load` (see its usage), and Validate names those flags.
type Config struct {
	Server      string            // server URL
	Token       string            // bearer token, when the server requires auth
	Protocol    ringcast.Protocol // the streams' protocol
	Subscribers int               // fan-out: subscribing streams
	Connections int               // grpc: h2c connections the streams share (0: one per 100 streams)
	Idle        int               // idle mode: streams to open (0: fan-out mode)
	Hold        time.Duration     // idle mode: keep the streams open this long after measuring
	Publishers  int               // concurrent publishers
	Rate        float64           // commits/s over all publishers (0: as fast as they can)
	Duration    time.Duration     // the measured window
	Warmup      time.Duration     // publishing before the measured window
	MaxLead     int               // publishers wait while the slowest subscriber is this far behind (0: half the window)
	Ready       time.Duration     // how long streams may take to open and catch up
	Progress    time.Duration     // interval of progress lines (0: none)
	AllowRemote bool              // accept a Server that is not a loopback address
}

// Validate checks c and fills Connections' default. Its errors name the
// flags of `ringcast load`.
func (c *Config) Validate() error {
	if err := checkServer(c.Server, c.AllowRemote); err != nil {
		return err
	}
	c.Server = strings.TrimRight(c.Server, "/")
	streams := c.Subscribers
	switch {
	case c.Idle < 0:
		return errors.New("--idle must not be negative")
	case c.Hold < 0:
		return errors.New("--hold must not be negative")
	case c.Hold > 0 && c.Idle == 0:
		return errors.New("--hold applies to idle mode (--idle)")
	case c.Protocol == ProtocolSSE && c.Idle == 0:
		return errors.New("--protocol sse applies to idle mode (--idle): the fan-out mode decodes every message with the RPC client")
	case c.Idle > 0:
		streams = c.Idle
	case c.Subscribers < 1:
		return errors.New("--subscribers must be at least 1")
	case c.Publishers < 1:
		return errors.New("--publishers must be at least 1")
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return errors.New("--rate must be a number >= 0")
	case c.Duration <= 0:
		return errors.New("--duration must be positive")
	case c.Warmup < 0:
		return errors.New("--warmup must not be negative")
	case c.MaxLead < 0:
		return errors.New("--max-lead must not be negative")
	}
	if c.Ready <= 0 {
		return errors.New("--ready-timeout must be positive")
	}
	if c.Progress < 0 {
		return errors.New("--progress must not be negative")
	}
	switch {
	case c.Connections < 0:
		return errors.New("--connections must not be negative")
	case c.Protocol != ringcast.ProtocolGRPC && c.Connections != 0 && c.Connections != streams:
		return fmt.Errorf("--connections applies to grpc: over HTTP/1.1 (%s) every stream has its own connection", c.Protocol)
	case c.Connections > streams:
		return fmt.Errorf("--connections (%d) must not exceed the number of streams (%d)", c.Connections, streams)
	case c.Connections == 0 && c.Protocol == ringcast.ProtocolGRPC:
		c.Connections = (streams + 99) / 100
	case c.Connections == 0:
		c.Connections = streams
	}
	return nil
}

// Run validates cfg, runs it (idle mode when cfg.Idle > 0, else fan-out)
// and returns its report, a *FanoutResult or an *IdleResult; progress lines
// go to progress.
func Run(ctx context.Context, cfg Config, progress io.Writer) (any, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	progress = &lockedWriter{w: progress} // written from several goroutines
	if cfg.Idle > 0 {
		return runIdle(ctx, cfg, progress)
	}
	return runFanout(ctx, cfg, progress)
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

// checkServer accepts an http(s) URL whose host is a loopback address
// (or "localhost"), or any host when allowRemote is set.
func checkServer(raw string, allowRemote bool) error {
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
