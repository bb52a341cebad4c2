package faults_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/testkit/faultproxy"
)

var (
	soakDuration  = flag.Duration("duration", 0, "TestSoak: how long to run (0: skip the soak)")
	soakConsumers = flag.Int("consumers", 300, "TestSoak: consumers per round (the three protocols in turn)")
	soakRound     = flag.Duration("round", 20*time.Second, "TestSoak: length of one round (one server lineage, then a history check)")
)

// TestSoak runs the fault scenarios together on a randomized schedule for
// --duration (`go tool task soak -- --duration 10m`; skipped otherwise):
// rounds of --round, each a fresh server (1 s leases in every other round)
// with --consumers consumers, proxy faults throughout, a kill -9 or SIGTERM
// restart at random moments, and consumers that stop at random points and
// resume from their persisted cursor. Every round's history is checked; the
// summary counts faults injected and facts checked. RINGCAST_FAULT_SEED
// replays a schedule.
func TestSoak(t *testing.T) {
	if *soakDuration <= 0 {
		t.Skip("soak: run with -args --duration D (go tool task soak -- --duration 10m)")
	}
	seed := faultproxy.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	faults := faultproxy.Schedule{Every: 300 * time.Millisecond, MaxStall: time.Second, MaxSlow: time.Second, MaxDelay: 5 * time.Millisecond}
	var total struct {
		rounds, proxyFaults, kills, drains, commits, facts, resyncs, restarts, conns int
	}
	start := time.Now()
	for round := 0; time.Since(start) < *soakDuration; round++ {
		roundSeed := rng.Uint64()
		var args []string
		if round%2 == 1 {
			args = append(args, "--lease", "1s")
		}
		ok := t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) {
			t.Logf("round seed %d, server args %v", roundSeed, args)
			r := newRun(t, "", roundSeed, args...)
			r.consume(*soakConsumers, []int{0, 0, 50, 500}[rng.IntN(4)])
			r.publish(2 * time.Millisecond)
			length := min(*soakRound, *soakDuration-time.Since(start)+time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), length)
			injected := make(chan int, 1)
			go func() { injected <- len(r.proxy.Run(ctx, faults, roundSeed)) }()
			rr := rand.New(rand.NewPCG(roundSeed, 9))
			for ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(2+rr.IntN(8)) * time.Second):
					if ctx.Err() != nil {
						break
					}
					if rr.IntN(2) == 0 {
						r.restartServer(syscall.SIGKILL)
						total.kills++
					} else {
						r.restartServer(syscall.SIGTERM)
						total.drains++
					}
				}
			}
			cancel()
			total.proxyFaults += <-injected
			sum := r.finish()
			total.rounds++
			total.commits += sum.Commits
			total.facts += sum.Facts
			total.resyncs += sum.Resyncs
			total.restarts += sum.Restarts
			total.conns += r.proxy.Stats().Conns
			t.Logf("%v", sum)
		})
		if !ok {
			break
		}
	}
	fmt.Printf("soak: %v, %d rounds, %d consumers per round (connect, grpc, grpcweb in turn), seed %d\n"+
		"faults injected: %d proxy faults (cuts, stalls, slowdowns, mid-frame cuts), %d kill -9 restarts, %d SIGTERM drains; %d connections\n"+
		"checked: %d commits published, %d facts delivered and checked, %d resyncs explained, %d consumer restarts from a persisted cursor\n",
		time.Since(start).Round(time.Second), total.rounds, *soakConsumers, seed,
		total.proxyFaults, total.kills, total.drains, total.conns,
		total.commits, total.facts, total.resyncs, total.restarts)
	if t.Failed() {
		fmt.Println("soak: FAILED (see the round above; replay with RINGCAST_FAULT_SEED)")
	} else {
		fmt.Println("lost 0, duplicated 0")
	}
}
