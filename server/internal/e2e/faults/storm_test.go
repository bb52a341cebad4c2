package faults_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// stormResult is what a reconnect storm measured.
type stormResult struct {
	catchUp []time.Duration // per consumer: from the storm's start to CaughtUp
	publish []time.Duration // publish latencies while the storm ran
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(float64(len(s))*p), len(s)-1)]
}

// storm starts n consumers at once against an in-process server while a
// publisher keeps publishing: half resume from a cursor `behind` commits
// back, half (when snapshots) start fresh with a LATEST_PER_KEY snapshot.
// Every consumer must catch up and then be given every later commit, in
// order, none missing or repeated; it returns the timings.
func storm(tb testing.TB, n, behind int, snapshots bool) stormResult {
	cfg := ringtest.Config()
	cfg.Window = 1 << 16
	srv := ringtest.Start(tb, cfg)
	pub := srv.Client(ringcast.ProtocolConnect)
	publishOne := func(i int) (time.Duration, uint64) {
		t0 := time.Now()
		res, err := pub.Publish(context.Background(), connectRequest(i))
		if err != nil {
			tb.Fatalf("publish: %v", err)
		}
		return time.Since(t0), res.Msg.Seq
	}
	var from uint64
	for i := range behind {
		_, seq := publishOne(i)
		if i == 0 {
			from = seq - 1
		}
	}
	epoch := srv.Hub().Epoch()
	hc := srv.HTTPClient(ringcast.ProtocolGRPC)
	c := ringcast.NewClient(srv.URL, ringcast.WithProtocol(ringcast.ProtocolGRPC), ringcast.WithHTTPClient(hc))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := make(chan struct{})
	var final atomic.Uint64 // the last published seq, once publishing stopped
	var res stormResult
	var mu sync.Mutex
	var caught sync.WaitGroup
	var wg sync.WaitGroup
	errs := make(chan error, n)
	reached := make([]atomic.Uint64, n)
	for i := range n {
		caught.Add(1)
		wg.Go(func() {
			fresh := snapshots && i%2 == 1
			opts := []ringcast.SubscribeOption{ringcast.WithCursor(ringcast.Cursor{Epoch: epoch, Seq: from})}
			if fresh {
				opts = []ringcast.SubscribeOption{ringcast.WithSnapshot(ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY)}
			}
			<-start
			t0 := time.Now()
			next, live := from+1, !fresh // the next seq owed once live
			keys := map[string]bool{}
			isCaught := false
			for it, err := range c.Subscribe(opts...).Items(ctx) {
				if err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("consumer %d: %w", i, err)
					}
					break
				}
				switch it.Kind {
				case ringcast.KindCaughtUp:
					if !isCaught {
						isCaught = true
						mu.Lock()
						res.catchUp = append(res.catchUp, time.Since(t0))
						mu.Unlock()
						caught.Done()
					}
					if !live {
						live, next = true, it.HeadSeq+1
						// The snapshot covered everything up to head: a
						// consumer that caught up at the last commit
						// published is owed nothing more.
						reached[i].Store(it.HeadSeq)
					}
				case ringcast.KindResynced:
					errs <- fmt.Errorf("consumer %d: resynced: %+v", i, it.Resync)
					return
				case ringcast.KindFact:
					if !live {
						keys[it.Fact.GetKey()] = true // the snapshot: one fact per key
						continue
					}
					if it.Seq != next {
						errs <- fmt.Errorf("consumer %d: given seq %d, want %d (lost or repeated)", i, it.Seq, next)
						return
					}
					next++
					reached[i].Store(it.Seq)
					if f := final.Load(); f != 0 && it.Seq >= f {
						return
					}
				}
			}
			if fresh && len(keys) != min(behind, stormKeys) {
				errs <- fmt.Errorf("consumer %d: snapshot of %d keys, want %d", i, len(keys), min(behind, stormKeys))
			}
		})
	}
	allCaught := make(chan struct{})
	go func() { caught.Wait(); close(allCaught) }()
	close(start)
	var last uint64
	guard := time.Now().Add(2 * time.Minute) // a hang guard only
publishing:
	for i := behind; ; i++ {
		d, seq := publishOne(i)
		res.publish = append(res.publish, d)
		last = seq
		select {
		case <-allCaught:
			break publishing
		case err := <-errs:
			cancel()
			wg.Wait()
			tb.Fatal(err)
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(guard) {
			cancel()
			wg.Wait()
			tb.Fatalf("%d of %d consumers caught up", len(res.catchUp), n)
		}
	}
	final.Store(last)
	// A hang guard only: every consumer is owed every commit up to last.
	deadline := time.Now().Add(2 * time.Minute)
	for i := range n {
		for reached[i].Load() < last {
			select {
			case err := <-errs:
				cancel()
				wg.Wait()
				tb.Fatal(err)
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				cancel()
				wg.Wait()
				tb.Fatalf("consumer %d reached %d, not %d", i, reached[i].Load(), last)
			}
		}
	}
	cancel()
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
	return res
}

const stormKeys = 100

func connectRequest(i int) *connect.Request[ringcastv1.PublishRequest] {
	return connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{
		Topic: "storm/t", Type: "storm.fact", Key: fmt.Sprintf("k%d", i%stormKeys),
		Payload: &ringcastv1.Fact_BinaryData{BinaryData: []byte("0123456789abcdef")}, ContentType: "application/octet-stream",
	}}})
}

// TestReconnectStorm: 1,000 consumers resume at once, each 500 commits
// behind, half of them needing a LATEST_PER_KEY snapshot instead, while
// commits keep being published: every one catches up and is then given
// every later commit, none lost or repeated. (Timings are logged, not
// asserted: BenchmarkReconnectStorm measures them.) Under the race detector
// or -short the storm is 150 consumers.
func TestReconnectStorm(t *testing.T) {
	n := 1000
	if raceEnabled || testing.Short() {
		n = 150
	}
	r := storm(t, n, 500, true)
	t.Logf("%d consumers: catch-up p50 %v p99 %v; publish p99 %v over %d publishes during the storm",
		n, percentile(r.catchUp, 0.5), percentile(r.catchUp, 0.99), percentile(r.publish, 0.99), len(r.publish))
}

// BenchmarkReconnectStorm reports catch-up p50/p99 and publish p99 while
// 1,000 consumers resume at once, 500 commits behind (the "snapshots"
// variant: half need a LATEST_PER_KEY snapshot instead). Run with
// -benchtime=1x: one iteration is one whole storm.
func BenchmarkReconnectStorm(b *testing.B) {
	for _, snapshots := range []bool{false, true} {
		name := "resume"
		if snapshots {
			name = "resume+snapshots"
		}
		b.Run(name, func(b *testing.B) {
			var catchUp, publish []time.Duration
			for range b.N {
				r := storm(b, 1000, 500, snapshots)
				catchUp = append(catchUp, r.catchUp...)
				publish = append(publish, r.publish...)
			}
			b.ReportMetric(float64(percentile(catchUp, 0.5).Microseconds())/1000, "catchup-p50-ms")
			b.ReportMetric(float64(percentile(catchUp, 0.99).Microseconds())/1000, "catchup-p99-ms")
			b.ReportMetric(float64(percentile(publish, 0.99).Microseconds())/1000, "publish-p99-ms")
		})
	}
}
