package faults_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/testkit/faultproxy"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// scenarioFaults is the proxy schedule of the short scenarios.
var scenarioFaults = faultproxy.Schedule{Every: 150 * time.Millisecond, MaxStall: 300 * time.Millisecond, MaxSlow: 300 * time.Millisecond, MaxDelay: 2 * time.Millisecond}

func forEachProtocol(t *testing.T, f func(t *testing.T, p ringcast.Protocol)) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) { f(t, p) })
	}
}

// TestProxyFaultsWhilePublishing: cuts, stalls, slowdowns and mid-frame
// cuts between the consumers and the server, on a seeded schedule, while
// commits flow: every consumer is given every fact once, in order.
func TestProxyFaultsWhilePublishing(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
		seed := faultproxy.Seed(t)
		r := newRun(t, p, seed)
		r.consume(3, 0)
		r.publish(3 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		faults := r.proxy.Run(ctx, scenarioFaults, seed)
		cancel()
		sum := r.finish()
		t.Logf("%d faults (%v): %v", len(faults), r.proxy.Stats(), sum)
	})
}

// TestLeasesOfOneSecond: every stream ends after its 1 s lease (±10%) and
// the consumers resume with their cursors, losing and repeating nothing:
// each consumer has its stream ended by the server with OK (the lease; no
// faults are injected and the server does not drain) twice, and opens a
// stream again after each end, and the history has no fact lost or
// repeated.
func TestLeasesOfOneSecond(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
		r := newRun(t, p, faultproxy.Seed(t), "--lease", "1s")
		r.consume(3, 0)
		r.publish(3 * time.Millisecond)
		r.awaitLeaseEnds(2) // let leases run out twice
		sum := r.finish()
		t.Logf("%v", sum)
	})
}

// awaitLeaseEnds waits until every consumer has had n streams ended by the
// server with OK and has opened more streams than were ended (its first,
// and one after each end). It fails the test if that has not happened
// within 60 s, a hang guard: leases of 1 s that never end a stream, or a
// consumer that does not reconnect after one, would wait for ever.
func (r *run) awaitLeaseEnds(n int) {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, cs := range r.consumers {
		for {
			opened, okEnds := cs.streams()
			if okEnds >= n && opened > okEnds {
				break
			}
			if time.Now().After(deadline) {
				r.stopPub()
				r.pubWG.Wait()
				r.stopCons()
				r.wg.Wait()
				r.t.Fatalf("%s: %d streams opened, %d ended by the server with OK; want %d lease ends, each followed by a reconnect (hang guard)", cs.name, opened, okEnds, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestServerKilledAndRestarted: kill -9 of the server mid-stream and a new
// instance (new epoch) on the same port: each consumer is told
// EPOCH_MISMATCH with the position it had reached and then gets the new
// epoch from its start.
func TestServerKilledAndRestarted(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
		testRestart(t, p, syscall.SIGKILL)
	})
}

// TestServerDrainedAndRestarted: the same with SIGTERM: the server drains
// (exit status 0) and a new instance starts.
func TestServerDrainedAndRestarted(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
		testRestart(t, p, syscall.SIGTERM)
	})
}

func testRestart(t *testing.T, p ringcast.Protocol, sig syscall.Signal) {
	r := newRun(t, p, faultproxy.Seed(t))
	r.consume(3, 0)
	r.publish(3 * time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	r.restartServer(sig)
	time.Sleep(500 * time.Millisecond)
	sum := r.finish()
	if sum.Resyncs < len(r.consumers) {
		t.Errorf("%d resyncs for %d consumers across a restart", sum.Resyncs, len(r.consumers))
	}
	t.Logf("%v", sum)
}

// TestConsumersStopMidCommitAndResume: consumers stop after a random number
// of facts — mostly inside a commit — and start again from their persisted
// cursor, while proxy faults continue: joined, their runs are exactly once.
func TestConsumersStopMidCommitAndResume(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
		seed := faultproxy.Seed(t)
		r := newRun(t, p, seed)
		r.consume(3, 7)
		r.publish(3 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		r.proxy.Run(ctx, scenarioFaults, seed)
		cancel()
		sum := r.finish()
		if sum.Restarts < len(r.consumers) {
			t.Errorf("%d restarts", sum.Restarts)
		}
		t.Logf("%v", sum)
	})
}
