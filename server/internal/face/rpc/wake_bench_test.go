package rpc_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// BenchmarkRPCWakeUp measures what live wake-ups cost and how long they
// make an event wait, at a low rate (one subscriber, 2,000 events/s) and a
// high one (100 subscribers, 1,000 events/s: 100,000 deliveries/s), with
// wake-ups at once (coalesce=0) and with the default window (1ms), over
// Connect. latency-p50-us/p99-us are from Hub.Publish being called to the
// first subscriber reading the event off its socket; cpu-ns/delivery is the
// whole process (server, publisher and the minimal clients). One op is one
// event.
func BenchmarkRPCWakeUp(b *testing.B) {
	const perSecond = 2000
	for _, n := range []int{1, 100} {
		perSecond := perSecond
		if n > 1 {
			perSecond = 1000
		}
		for _, coalesce := range []time.Duration{0, time.Millisecond} {
			b.Run(fmt.Sprintf("subscribers=%d/events=%d/s/coalesce=%v", n, perSecond, coalesce), func(b *testing.B) {
				cfg := ringtest.Config()
				cfg.Window = benchRPCWindow
				cfg.Heartbeat = time.Hour
				cfg.Coalesce = coalesce
				s := ringtest.Start(b, cfg)
				h := s.Hub()
				f := startRPCFleet(b, s, ringcast.ProtocolConnect, n)
				epoch := time.Now()
				arrivals := &arrivalLog{epoch: epoch, base: f.counters[0].msgs.Load(), at: make([]int64, b.N)}
				f.counters[0].rec.Store(arrivals)
				published := make([]int64, b.N)
				cpu0, ok0 := processCPU()
				b.ResetTimer()
				var last uint64
				for i := range b.N {
					if d := time.Until(epoch.Add(time.Duration(i) * time.Second / time.Duration(perSecond))); d > 0 {
						time.Sleep(d)
					}
					published[i] = int64(time.Since(epoch))
					r, err := h.Publish(benchRPCFacts(), "")
					if err != nil {
						b.Fatal(err)
					}
					last = r.Seq
				}
				f.waitFor(b, last)
				b.StopTimer()
				cpu1, ok1 := processCPU()
				lat := make([]float64, b.N)
				for i := range lat {
					lat[i] = float64(arrivals.at[i]-published[i]) / 1e3
				}
				slices.Sort(lat)
				b.ReportMetric(lat[len(lat)/2], "latency-p50-us")
				b.ReportMetric(lat[len(lat)*99/100], "latency-p99-us")
				if ok0 && ok1 {
					b.ReportMetric(float64(cpu1-cpu0)/(float64(n)*float64(b.N)), "cpu-ns/delivery")
				}
				f.stop()
			})
		}
	}
}
