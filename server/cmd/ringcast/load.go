package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/ops/loadgen"
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
Only the run's own commits (topics load/<random>/…) count as deliveries:
others' (a --demo feed, another run) are reported as other_deliveries.

Idle (--idle N): opens N streams and publishes nothing; once all have caught
up and the server's ringcast_subscribers gauge counts them, reports the
server's RSS, heap and stack growth per stream; --hold keeps them open
afterwards, so the server can be profiled with them. In idle mode
--protocol may also be sse: the streams are GET /events, one HTTP/1.1
connection each, counted once their caught-up frame has arrived.

The load tool shares the machine with the server: on few cores, peak
figures are bounded by the tool as much as by the server. Only loopback
servers are accepted unless --allow-remote is given. Stops after the
measured window, or on SIGINT (reporting what was measured so far).`

// loadCmd parses the flags of "ringcast load" and runs package loadgen.
func loadCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	var cfg loadgen.Config
	fs := newFlagSet("load", loadSynopsis, stderr)
	cf.register(fs)
	fs.IntVar(&cfg.Subscribers, "subscribers", 100, "fan-out mode: number of subscribing streams")
	fs.IntVar(&cfg.Connections, "connections", 0, "grpc only: h2c connections the streams are spread over, each with its own HTTP client (0: one per 100 streams); connect and grpcweb use HTTP/1.1, one connection per stream")
	fs.IntVar(&cfg.Idle, "idle", 0, "idle mode: open this many streams, publish nothing, report the server's memory per stream (0: fan-out mode)")
	fs.DurationVar(&cfg.Hold, "hold", 0, "idle mode: keep the streams open this long after measuring, e.g. to take the server's heap and goroutine profiles (--pprof-addr)")
	fs.IntVar(&cfg.Publishers, "publishers", 4, "concurrent publishers (each waits for its receipt, so a paced rate needs enough of them to cover the round trip)")
	fs.Float64Var(&cfg.Rate, "rate", 1000, "commits per second over all publishers (0: as fast as they can)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of the measured window")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "publishing before the measured window starts")
	fs.IntVar(&cfg.MaxLead, "max-lead", 0, "publishers wait while the slowest subscriber is this many commits behind (0: half the server's window)")
	fs.DurationVar(&cfg.Ready, "ready-timeout", 60*time.Second, "how long to wait for all streams to open and catch up")
	fs.DurationVar(&cfg.Progress, "progress", time.Second, "interval of progress lines on stderr (0: none)")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "accept a --server that is not a loopback address")
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
	if strings.EqualFold(cf.protocol, string(loadgen.ProtocolSSE)) {
		p, err = loadgen.ProtocolSSE, nil
	}
	if err != nil {
		return bad("--protocol: %v", err)
	}
	cfg.Server, cfg.Token, cfg.Protocol = cf.server, cf.token, p
	if err := cfg.Validate(); err != nil {
		return bad("%v", err)
	}
	// A first GetServerStatus over Connect says at once (or, with --retry,
	// waits until) whether a ringcast answers at all.
	probe := cf
	probe.protocol = string(ringcast.ProtocolConnect)
	pc, err := probe.client()
	if err != nil {
		return bad("%v", err)
	}
	_, err = firstRequest(ctx, &probe, stderr, "load", pc.Status)
	pc.CloseIdleConnections()
	if err != nil {
		return err
	}
	res, err := loadgen.Run(ctx, cfg, stderr)
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
