package natslog_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// benchStores are the stores the benchmarks compare: memory, the embedded
// R1 file store (its Log the stream's only writer, as the server's) and an R3 stream on an in-process three-node cluster.
var benchStores = []string{"memory", "embedded-R1", "cluster-R3"}

// benchHub returns a hub on the named store.
func benchHub(b *testing.B, store string, window int) *hub.Hub {
	b.Helper()
	cfg := hub.Config{Window: window, Lease: -1, Heartbeat: time.Hour}
	switch store {
	case "embedded-R1":
		_, nc := embedded(b, b.TempDir())
		cfg.Log = openLog(b, nc, natslog.Options{SoleWriter: true}) // as the server opens it

	case "cluster-R3":
		_, urls := cluster(b)
		nc, err := natslog.Connect([]string{urls}, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for {
			l, err := natslog.Open(ctx, nc, natslog.Options{Replicas: 3, Timeout: 2 * time.Second})
			if err == nil {
				cfg.Log = l
				break
			}
			if ctx.Err() != nil {
				b.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	h, err := hub.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	return h
}

func reportPercentiles(b *testing.B, prefix string, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.50), prefix+"p50-ms")
	b.ReportMetric(p(0.99), prefix+"p99-ms")
}

// BenchmarkPublish: one publisher, each publish waiting for its receipt
// (latency), and 16 concurrent publishers (throughput), per store.
func BenchmarkPublish(b *testing.B) {
	for _, store := range benchStores {
		b.Run(store+"/sequential", func(b *testing.B) {
			h := benchHub(b, store, 1024)
			lat := make([]time.Duration, 0, b.N)
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				if _, err := h.Publish([]*ringcastv1.Fact{fact("bench/a", fmt.Sprint(i%100), i)}, ""); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.ReportMetric(float64(len(lat))/time.Since(start).Seconds(), "commits/s")
			reportPercentiles(b, "", lat)
		})
		b.Run(store+"/parallel16", func(b *testing.B) {
			h := benchHub(b, store, 1024)
			var n atomic.Int64
			start := time.Now()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(n.Add(1))
					if _, err := h.Publish([]*ringcastv1.Fact{fact("bench/a", fmt.Sprint(i%100), i)}, ""); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "commits/s")
		})
	}
}

// latencySink records, per commit, the time from its publish (event time)
// to its delivery to this stream.
type latencySink struct {
	mu   sync.Mutex
	lat  []time.Duration
	last uint64
	done chan struct{}
	end  uint64
}

func (s *latencySink) Send(m *ringcastv1.SubscribeEventsResponse) error {
	if m.GetCommit() == nil {
		return nil
	}
	d := time.Since(m.EventTime.AsTime())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat = append(s.lat, d)
	s.last = m.Seq
	if m.Seq >= s.end {
		close(s.done)
		s.end = ^uint64(0)
	}
	return nil
}

// BenchmarkEndToEndAt1000PerSecond publishes one commit per millisecond
// for b.N commits and measures, on a live subscriber of the same hub, the
// time from each publish call to the commit's delivery.
func BenchmarkEndToEndAt1000PerSecond(b *testing.B) {
	for _, store := range benchStores {
		b.Run(store, func(b *testing.B) {
			h := benchHub(b, store, 1024)
			head := h.Status().HeadSeq
			n := max(b.N, 1000)
			sink := &latencySink{done: make(chan struct{}), end: ^uint64(0)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { _ = h.Subscribe(ctx, hub.Request{SinceSeq: head, Epoch: h.Epoch()}, sink) }()
			b.ResetTimer()
			// Publish i is due at start + i ms (late ones go at once), each
			// on its own goroutine (at most 64 in flight), so that neither
			// a slow receipt nor a late wake-up lowers the rate.
			sem := make(chan struct{}, 64)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var last uint64
			start := time.Now()
			for i := range n {
				time.Sleep(time.Until(start.Add(time.Duration(i) * time.Millisecond)))
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					r, err := h.Publish([]*ringcastv1.Fact{fact("bench/a", "k", i)}, "")
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					last = max(last, r.Seq)
					mu.Unlock()
				})
			}
			wg.Wait()
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "commits/s")
			sink.mu.Lock()
			if sink.last >= last {
				close(sink.done)
			} else {
				sink.end = last
			}
			sink.mu.Unlock()
			<-sink.done
			b.StopTimer()
			sink.mu.Lock()
			reportPercentiles(b, "e2e-", sink.lat)
			sink.mu.Unlock()
		})
	}
}

type countSink struct{ n int }

func (c *countSink) Send(m *ringcastv1.SubscribeEventsResponse) error {
	if m.GetCommit() != nil {
		c.n++
	}
	return nil
}

// BenchmarkCatchUp1000CursorsBeyondTheRing: 1,000 subscribers resume at
// once from a cursor 5,000 commits behind head, with a ring of 1,024: each
// reads about 4,000 commits from the stream, then the rest from the ring.
func BenchmarkCatchUp1000CursorsBeyondTheRing(b *testing.B) {
	for _, store := range benchStores[1:] {
		b.Run(store, func(b *testing.B) {
			h := benchHub(b, store, 1024)
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Go(func() {
					for i := w; i < 6000; i += 16 {
						if _, err := h.Publish([]*ringcastv1.Fact{fact("bench/a", "k", i)}, ""); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			head := h.Status().HeadSeq
			for b.Loop() {
				var cw sync.WaitGroup
				for range catchUpCursors {
					cw.Go(func() {
						var c countSink
						if err := h.Subscribe(context.Background(), hub.Request{SinceSeq: head - 5000, Epoch: h.Epoch(), EndAtHead: true}, &c); err != nil || c.n != 5000 {
							b.Errorf("catch-up: %d commits, %v", c.n, err)
						}
					})
				}
				cw.Wait()
			}
		})
	}
}

// catchUpCursors is how many cursors BenchmarkCatchUp1000CursorsBeyondTheRing resumes.
var catchUpCursors = 1000
