package hub_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// The hub benchmarks carry ringcast's in-process speed claims (see
// docs/performance.md): publish cost independent of the number of
// subscribers, fan-out deliveries per second and CPU per delivery, snapshot
// cost, and memory per idle subscriber. Subscribers here use a Sink that
// only records the position it reached, so the figures are the hub's own.

const benchWindow = 4096

// benchPayload is a small binary payload shared (read-only) by every fact.
var benchPayload = []byte(`{"level_m":1.234,"trend":"rising","station":"g-014"}`)

// benchFacts returns n one-fact commits ready to publish (each publish takes
// ownership of its slice). A non-nil keyOf gives fact i the key keyOf(i).
func benchFacts(n int, keyOf func(i int) string) [][]*ringcastv1.Fact {
	out := make([][]*ringcastv1.Fact, n)
	for i := range out {
		f := &ringcastv1.Fact{
			Topic:       "gauges/ribble/g-014",
			Type:        "gauge.level",
			Payload:     &ringcastv1.Fact_BinaryData{BinaryData: benchPayload},
			ContentType: "application/json",
		}
		if keyOf != nil {
			f.Key = keyOf(i)
		}
		out[i] = []*ringcastv1.Fact{f}
	}
	return out
}

func benchHub(b *testing.B, cfg hub.Config) *hub.Hub {
	b.Helper()
	if cfg.Window == 0 {
		cfg.Window = benchWindow
	}
	cfg.Lease = -1
	cfg.Heartbeat = time.Hour
	h, err := hub.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	return h
}

// posSink records the seq of the last positioned response it was sent and
// closes caught at the first CaughtUp. It does no other work.
type posSink struct {
	pos    atomic.Uint64
	caught chan struct{}
}

func (s *posSink) Send(r *ringcastv1.SubscribeEventsResponse) error {
	if seq := r.GetSeq(); seq != 0 {
		s.pos.Store(seq)
		return nil
	}
	if r.GetCaughtUp() != nil && s.caught != nil {
		close(s.caught)
		s.caught = nil
	}
	return nil
}

// fleet is n live subscribers on one hub, each on its own goroutine.
type fleet struct {
	sinks  []*posSink
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ended  atomic.Int64 // streams that ended other than by cancellation
}

// startFleet starts n tailing subscribers and returns once all are caught up.
func startFleet(b *testing.B, h *hub.Hub, n int, req hub.Request) *fleet {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{sinks: make([]*posSink, n), cancel: cancel}
	caught := make([]chan struct{}, n)
	for i := range f.sinks {
		caught[i] = make(chan struct{})
		s := &posSink{caught: caught[i]}
		f.sinks[i] = s
		f.wg.Go(func() {
			if err := h.Subscribe(ctx, req, s); !errors.Is(err, context.Canceled) {
				f.ended.Add(1)
			}
		})
	}
	for _, c := range caught {
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			cancel()
			b.Fatal("subscribers did not catch up")
		}
	}
	b.Cleanup(f.stop)
	return f
}

// stop cancels every stream and waits for them; idempotent.
func (f *fleet) stop() {
	f.cancel()
	f.wg.Wait()
}

// minPos is the lowest position any subscriber has reached.
func (f *fleet) minPos() uint64 {
	m := ^uint64(0)
	for _, s := range f.sinks {
		m = min(m, s.pos.Load())
	}
	return m
}

// waitFor returns once every subscriber has reached seq.
func (f *fleet) waitFor(b *testing.B, seq uint64) {
	deadline := time.Now().Add(30 * time.Second)
	for f.minPos() < seq {
		if f.ended.Load() > 0 {
			b.Fatalf("%d subscribers ended (cut for lagging?)", f.ended.Load())
		}
		if time.Now().After(deadline) {
			b.Fatalf("subscribers stuck below seq %d (min %d)", seq, f.minPos())
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// BenchmarkPublish measures Publish with 0, 100 and 10,000 live subscribers
// attached. Publish appends and kicks the notifier; waking the subscribers
// happens on the notifier's goroutine and their delivery on their own, so
// the publisher's share stays flat:
//
//   - publisher-cpu-ns/op: CPU time of the publishing thread per publish
//     (the benchmark goroutine is locked to its thread);
//   - publish-ns/op: wall time inside Publish calls, which on a small
//     machine also includes waiting for a core the subscribers are using;
//   - ns/op: wall time per event published AND delivered to every
//     subscriber (every 512 publishes the benchmark waits until all have
//     caught up, so none is cut for lagging): the fan-out cost, which does
//     grow with the subscribers;
//   - allocs/op: every allocation in the process, the subscribers' included.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{0, 100, 10_000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			h := benchHub(b, hub.Config{})
			f := startFleet(b, h, n, hub.Request{})
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()

			const chunk = 512
			var cpu int64
			var inPublish time.Duration
			cpuOK := true
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				b.StopTimer()
				facts := benchFacts(min(chunk, b.N-done), nil)
				b.StartTimer()
				c0, ok0 := threadCPU()
				var last uint64
				for _, fs := range facts {
					t0 := time.Now()
					r, err := h.Publish(fs, "")
					inPublish += time.Since(t0)
					if err != nil {
						b.Fatal(err)
					}
					last = r.Seq
				}
				c1, ok1 := threadCPU()
				cpu += c1 - c0
				cpuOK = cpuOK && ok0 && ok1
				f.waitFor(b, last)
				done += len(facts)
			}
			b.StopTimer()
			b.ReportMetric(float64(inPublish.Nanoseconds())/float64(b.N), "publish-ns/op")
			if cpuOK {
				b.ReportMetric(float64(cpu)/float64(b.N), "publisher-cpu-ns/op")
			}
			f.stop()
		})
	}
}

// BenchmarkFanout measures deliveries per second from one publisher to 100
// and 1,000 in-process subscribers with a no-op Sink. One op is one
// published event delivered to every subscriber. cpu-ns/delivery is the
// whole process's CPU time (publisher, notifier, subscribers, GC) divided by
// the deliveries; allocs/delivery counts every allocation in the process,
// the publisher's included.
//
// The publisher only waits (flow control, as a real producer slower than its
// consumers would) when the slowest subscriber is more than half a window
// behind, so nobody is cut for lagging.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			h := benchHub(b, hub.Config{})
			f := startFleet(b, h, n, hub.Request{})
			const chunk = 256
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			cpu0, ok0 := processCPU()
			b.ResetTimer()
			start := time.Now()
			var last uint64
			for done := 0; done < b.N; {
				for _, fs := range benchFacts(min(chunk, b.N-done), nil) {
					r, err := h.Publish(fs, "")
					if err != nil {
						b.Fatal(err)
					}
					last = r.Seq
					done++
				}
				if last-f.minPos() > benchWindow/2 {
					f.waitFor(b, last-benchWindow/4)
				}
			}
			f.waitFor(b, last)
			elapsed := time.Since(start)
			b.StopTimer()
			cpu1, ok1 := processCPU()
			runtime.ReadMemStats(&ms1)
			deliveries := float64(n) * float64(b.N)
			b.ReportMetric(deliveries/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/deliveries, "allocs/delivery")
			if ok0 && ok1 {
				b.ReportMetric(float64(cpu1-cpu0)/deliveries, "cpu-ns/delivery")
			}
			f.stop()
			if f.ended.Load() > 0 {
				b.Fatalf("%d subscribers ended early", f.ended.Load())
			}
		})
	}
}

// factCountSink counts the facts of the commits it is sent.
type factCountSink struct{ facts int }

func (s *factCountSink) Send(r *ringcastv1.SubscribeEventsResponse) error {
	s.facts += len(r.GetCommit().GetFacts())
	return nil
}

// BenchmarkLatestPerKeySnapshot measures one SNAPSHOT_LATEST_PER_KEY
// subscribe (end_at_head) over a state table of 10,000 keys, published as
// 1,000 commits of 10 keyed facts; most commits have left the ring, so the
// snapshot comes from the state table.
func BenchmarkLatestPerKeySnapshot(b *testing.B) {
	const keys, perCommit = 10_000, 10
	h := benchHub(b, hub.Config{Window: 1024})
	for c := range keys / perCommit {
		facts := make([]*ringcastv1.Fact, 0, perCommit)
		for _, fs := range benchFacts(perCommit, func(i int) string { return fmt.Sprintf("g-%05d", c*perCommit+i) }) {
			facts = append(facts, fs[0])
		}
		if _, err := h.Publish(facts, ""); err != nil {
			b.Fatal(err)
		}
	}
	req := hub.Request{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var s factCountSink
		if err := h.Subscribe(context.Background(), req, &s); err != nil {
			b.Fatal(err)
		}
		if s.facts != keys {
			b.Fatalf("snapshot held %d facts, want %d", s.facts, keys)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/fact")
}

// BenchmarkPublishStateTable compares publishing unkeyed facts with keyed
// ones, which also update the latest-per-key table: keys that fit the table
// (10,000 keys, limit 65,536) and keys that keep evicting (20,000 keys
// cycling through a limit of 10,000).
func BenchmarkPublishStateTable(b *testing.B) {
	cases := []struct {
		name  string
		limit int
		keys  int
	}{
		{"unkeyed", 0, 0},
		{"keyed/keys=10000", 65536, 10_000},
		{"keyed-evicting/keys=20000/limit=10000", 10_000, 20_000},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			h := benchHub(b, hub.Config{StateKeys: tc.limit})
			var keyOf func(int) string
			names := make([]string, tc.keys)
			for i := range names {
				names[i] = fmt.Sprintf("g-%05d", i)
			}
			next := 0
			if tc.keys > 0 {
				keyOf = func(int) string { next++; return names[next%len(names)] }
			}
			const chunk = 1024
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				b.StopTimer()
				facts := benchFacts(min(chunk, b.N-done), keyOf)
				b.StartTimer()
				for _, fs := range facts {
					if _, err := h.Publish(fs, ""); err != nil {
						b.Fatal(err)
					}
				}
				done += len(facts)
			}
		})
	}
}

// BenchmarkIdleSubscriber measures the memory an idle live subscriber costs:
// its goroutine's stack and its stream state, as the heap and stack in use
// with 1,000 caught-up subscribers waiting, minus before they started (after
// a GC each time). One op starts, measures and stops 1,000 subscribers.
func BenchmarkIdleSubscriber(b *testing.B) {
	const n = 1000
	h := benchHub(b, hub.Config{})
	var total int64
	for b.Loop() {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		f := startFleet(b, h, n, hub.Request{})
		runtime.GC()
		runtime.ReadMemStats(&m1)
		total += int64(m1.HeapAlloc) - int64(m0.HeapAlloc) + int64(m1.StackInuse) - int64(m0.StackInuse)
		f.stop()
	}
	b.ReportMetric(float64(total)/float64(b.N*n), "bytes/subscriber")
}
