// Package faults_test holds ringcast's fault scenarios (tests only): the real
// `ringcast serve` binary in a subprocess behind a fault proxy
// (server/internal/testkit/faultproxy), publishers and Go-client consumers on
// Connect, gRPC and gRPC-Web, and a history checker
// (server/internal/testkit/history) that proves no fact lost or repeated between
// resync boundaries and every resync explained. The short scenarios run in
// the normal test run; TestSoak runs them on a randomized schedule for as
// long as asked (`go tool task soak -- --duration 10m`). docs/reliability.md
// describes them and how to replay a failing seed.
package faults_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/faultproxy"
	"github.com/ringcast/ringcast/server/internal/testkit/history"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// fastBackoff keeps reconnects quick so a scenario stays short.
var fastBackoff = ringcast.Backoff{Min: 5 * time.Millisecond, Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Reset: time.Second}

// run is one scenario in progress: a server behind a proxy, a publisher
// straight to the server, consumers through the proxy, and the history.
type run struct {
	t     testing.TB
	proto ringcast.Protocol
	srv   *server
	proxy *faultproxy.Proxy
	hist  *history.History
	seed  uint64

	// pubMu is held by each publish and by a server kill or restart, so no
	// publish is in flight when the server dies: every commit the server
	// made was receipted.
	pubMu     sync.Mutex
	published int // commits, guarded by pubMu
	last      struct{ epoch, seq uint64 }
	receipts  map[uint64]map[uint64]int // epoch -> seq -> facts, guarded by pubMu
	// mayStop, when set (with pubMu held), is what the log of a server
	// that ends by itself must say for its publisher to stop quietly,
	// recording stopped, rather than fail the test.
	mayStop string
	stopped bool // guarded by pubMu
	pubRuns int  // publishers started: each one's keys are its own
	// restored, once set, is the epoch under which a restore put another
	// log in place (TestRestoredOlderCopyWhileConsumersHoldCursors): the
	// history records that log as the epoch restoredLog(restored) —
	// receipts from then on (pubRestored, guarded by pubMu), and each
	// consumer's items from its first resync in that epoch on.
	restored    atomic.Uint64
	pubRestored bool

	wg        sync.WaitGroup // consumers
	pubWG     sync.WaitGroup // the publisher
	stopPub   context.CancelFunc
	stopCons  context.CancelFunc
	consCtx   context.Context // the consumers' (consumersContext)
	consumers []*consumer
}

// consumer is one Go-client consumer's progress.
type consumer struct {
	name  string
	proto ringcast.Protocol
	rec   *history.Consumer

	mu sync.Mutex
	at struct{ epoch, seq uint64 } // the last commit it was given whole (epochs as the history records them)
	// moved is the reason of the resync that took it to the log a
	// restore put in place ("": none yet); guarded by mu.
	moved    string
	restarts int
	opened   int // streams whose first response arrived (StateOpen)
	okEnds   int // streams the server ended with OK (a lease or a drain)
}

// connectionEvent counts ev, one step of cs's connection lifecycle.
func (cs *consumer) connectionEvent(ev ringcast.ConnectionEvent) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch {
	case ev.State == ringcast.StateOpen:
		cs.opened++
	case ev.State == ringcast.StateReconnecting && ev.Err == nil && !ev.Resync:
		cs.okEnds++
	}
}

// restoredLog is how the history names the log a restore put in place
// under epoch: as another epoch, which it is for every consumer that holds
// a cursor from the log before (its seqs name other commits).
func restoredLog(epoch uint64) uint64 { return epoch ^ 1<<63 }

// logOf is how the history records epoch for cs: the restored log's name
// once cs resynced into it. A resync in the restored epoch moves cs there.
func (r *run) logOf(cs *consumer, epoch uint64, resync bool, reason string) uint64 {
	restored := r.restored.Load()
	if restored == 0 || epoch != restored {
		return epoch
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if resync && cs.moved == "" {
		cs.moved = reason
	}
	if cs.moved == "" {
		return epoch
	}
	return restoredLog(epoch)
}

// streams returns how many streams cs opened, and how many of them the
// server ended with OK.
func (cs *consumer) streams() (opened, okEnds int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.opened, cs.okEnds
}

// newRun starts a server with args behind a proxy. Its consumers speak p,
// or with p == "" the three protocols in turn.
func newRun(t testing.TB, p ringcast.Protocol, seed uint64, args ...string) *run {
	t.Helper()
	// Every consumer connects from 127.0.0.1: no per-client stream bound.
	srv := startServer(t, append([]string{"--window", "65536", "--heartbeat", "250ms", "--max-streams-per-client", "-1"}, args...)...)
	proxy := faultproxy.New(t, srv.addr)
	return &run{t: t, proto: p, srv: srv, proxy: proxy, hist: history.New(), seed: seed}
}

// publish runs a publisher until stop: commits of 1–4 facts, one every
// pause, each with an idempotency key so a retry never commits twice.
func (r *run) publish(pause time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	r.stopPub = cancel
	hc := ringcast.NewHTTPClient(ringcast.ProtocolConnect)
	c := ringcast.NewClient(r.srv.URL(), ringcast.WithHTTPClient(hc))
	r.pubRuns++
	run := r.pubRuns
	rng := rand.New(rand.NewPCG(r.seed, uint64(1+run)))
	r.pubWG.Go(func() {
		defer hc.CloseIdleConnections()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			facts := make([]*ringcastv1.Fact, 1+rng.IntN(4))
			for i := range facts {
				data, _ := structpb.NewStruct(map[string]any{"n": float64(n), "i": float64(i)})
				facts[i] = &ringcastv1.Fact{Topic: "faults/t", Type: "fault.test", Payload: &ringcastv1.Fact_Data{Data: data}}
			}
			r.pubMu.Lock()
			key := fmt.Sprintf("p-%d", n)
			if run > 1 {
				key = fmt.Sprintf("p%d-%d", run, n)
			}
			var res *ringcastv1.PublishResponse
			var err error
			for attempt := range 20 { // a stale keep-alive connection after a restart fails once
				// Not cancelled by stop: a publish the server committed
				// must get its receipt.
				pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err = c.Publish(pctx, facts, key)
				pcancel()
				if err == nil {
					break
				}
				hc.CloseIdleConnections()
				time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
			}
			if err == nil {
				epoch := res.InstanceEpoch
				if r.pubRestored && epoch == r.restored.Load() {
					epoch = restoredLog(epoch)
				}
				r.hist.Published(epoch, res.Seq, len(facts))
				if r.receipts == nil {
					r.receipts = map[uint64]map[uint64]int{}
				}
				if r.receipts[epoch] == nil {
					r.receipts[epoch] = map[uint64]int{}
				}
				if _, again := r.receipts[epoch][res.Seq]; again {
					r.t.Errorf("seq %d of epoch %016x acknowledged for two commits", res.Seq, epoch)
				}
				r.receipts[epoch][res.Seq] = len(facts)
				r.published++
				r.last.epoch, r.last.seq = epoch, res.Seq
			} else if r.mayStop != "" && r.serverStopped() {
				r.stopped = true
				r.pubMu.Unlock()
				return
			}
			r.pubMu.Unlock()
			if err != nil {
				r.t.Errorf("publish: %v", err)
				return
			}
		}
	})
}

// serverStopped waits (hang guard: 60 s) for a server that refuses
// publishes to end, and reports whether it did with a log that says
// r.mayStop. Call it with pubMu held.
func (r *run) serverStopped() bool {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ended, err, logs := r.srv.ended()
		if ended {
			if !strings.Contains(logs, r.mayStop) {
				r.t.Errorf("ringcast serve ended (%v) without saying %q; log:\n%s", err, r.mayStop, logs)
				return false
			}
			r.t.Logf("ringcast serve ended (%v), as it must when %s", err, r.mayStop)
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitPublished waits (hang guard: 60 s) until n more commits than now
// have been published.
func (r *run) awaitPublished(n int) {
	r.t.Helper()
	r.pubMu.Lock()
	want := r.published + n
	r.pubMu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r.pubMu.Lock()
		got, stopped := r.published, r.stopped
		r.pubMu.Unlock()
		if got >= want || stopped {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d commits published, want %d (hang guard)", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// consume starts n consumers through the proxy. With restartWithin > 0
// each stops after a random 1..restartWithin facts (mostly mid-commit),
// and starts again from its persisted cursor (its text form), over and
// over.
func (r *run) consume(n, restartWithin int) {
	ctx := r.consumersContext()
	for i := range n {
		p := r.proto
		if p == "" { // mixed: the protocols in turn
			p = ringtest.Protocols[i%len(ringtest.Protocols)]
		}
		cs := &consumer{name: fmt.Sprintf("%s-%d", p, i), proto: p}
		cs.rec = r.hist.Consumer(cs.name)
		r.consumers = append(r.consumers, cs)
		rng := rand.New(rand.NewPCG(r.seed, uint64(100+i)))
		r.wg.Go(func() { r.consumer(ctx, cs, rng, restartWithin) })
	}
}

// consumersContext is the context every consumer runs in; stopCons ends
// it.
func (r *run) consumersContext() context.Context {
	if r.consCtx == nil {
		r.consCtx, r.stopCons = context.WithCancel(context.Background())
	}
	return r.consCtx
}

func (r *run) consumer(ctx context.Context, cs *consumer, rng *rand.Rand, restartWithin int) {
	hc := ringcast.NewHTTPClient(cs.proto)
	defer hc.CloseIdleConnections()
	c := ringcast.NewClient(r.proxy.URL(), ringcast.WithProtocol(cs.proto), ringcast.WithHTTPClient(hc), ringcast.WithBackoff(fastBackoff))
	persisted := "" // the cursor as an application would store it
	for ctx.Err() == nil {
		var cur ringcast.Cursor
		if persisted != "" {
			var err error
			if cur, err = ringcast.ParseCursor(persisted); err != nil {
				r.t.Errorf("%s: persisted cursor %q: %v", cs.name, persisted, err)
				return
			}
		}
		limit := 0
		if restartWithin > 0 {
			limit = 1 + rng.IntN(restartWithin)
		}
		facts := 0
		sub := c.Subscribe(ringcast.WithCursor(cur), ringcast.WithConnectionEvents(cs.connectionEvent))
		for it, err := range sub.Items(ctx) {
			if err != nil {
				if ctx.Err() == nil {
					r.t.Errorf("%s: %v", cs.name, err)
				}
				return
			}
			switch it.Kind {
			case ringcast.KindFact:
				epoch := r.logOf(cs, it.Epoch, false, "")
				cs.rec.Fact(epoch, it.Seq, it.Index)
				if it.Last {
					cs.mu.Lock()
					cs.at.epoch, cs.at.seq = epoch, it.Seq
					cs.mu.Unlock()
				}
				facts++
			case ringcast.KindResynced:
				rs := it.Resync
				cs.rec.Resynced(r.logOf(cs, it.Epoch, true, rs.Reason.String()), rs.Reason.String(), rs.RequestedSeq, rs.OldestSeq, rs.HeadSeq)
			}
			text, err := it.Cursor.MarshalText()
			if err != nil {
				r.t.Errorf("%s: %v", cs.name, err)
				return
			}
			persisted = string(text)
			if limit > 0 && facts >= limit {
				break
			}
		}
		if ctx.Err() == nil {
			cs.rec.Restarted()
			cs.mu.Lock()
			cs.restarts++
			cs.mu.Unlock()
		}
	}
}

// restartServer stops the server with sig and starts a new instance (a
// new epoch) on the same port, with no publish in flight.
func (r *run) restartServer(sig syscall.Signal) {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.srv.restart(sig)
}

// finish stops the publisher, waits (hang guard: 60 s) until every
// consumer has been given the last published commit, stops them, and
// checks the history. It returns the check's summary.
func (r *run) finish() history.Summary {
	r.t.Helper()
	r.stopPub()
	r.pubWG.Wait()
	r.proxy.Resume()
	r.pubMu.Lock()
	published := r.published
	r.pubMu.Unlock()
	if published == 0 {
		r.stopCons()
		r.wg.Wait()
		r.t.Fatal("nothing was published")
	}
	if !r.settle() {
		r.stopCons()
		r.wg.Wait()
		_, err, logs := r.srv.ended()
		r.t.Fatalf("ringcast serve ended (%v) before every consumer was given the last commit; log:\n%s", err, logs)
	}
	r.stopCons()
	r.wg.Wait()
	sum, err := r.hist.Check(true)
	if err != nil {
		r.t.Fatal(err)
	}
	return sum
}

// settle waits (hang guard: 60 s), with the publisher stopped, until every
// consumer has been given the last published commit. It reports false if
// the server ended by itself first.
func (r *run) settle() bool {
	r.t.Helper()
	r.pubMu.Lock()
	last := r.last
	r.pubMu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for _, cs := range r.consumers {
		for {
			cs.mu.Lock()
			at := cs.at
			cs.mu.Unlock()
			if at == last {
				break
			}
			if ended, _, _ := r.srv.ended(); ended {
				return false
			}
			if time.Now().After(deadline) {
				r.stopCons()
				r.wg.Wait()
				_, err := r.hist.Check(false)
				r.t.Fatalf("%s reached %016x/%d, not the last commit %016x/%d (hang guard; history so far: %v)", cs.name, at.epoch, at.seq, last.epoch, last.seq, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return true
}
