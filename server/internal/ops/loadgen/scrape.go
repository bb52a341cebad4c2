package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeMedian scrapes three times, 200 ms apart, and keeps each figure's
// median: heap figures move with the server's GC cycles.
func scrapeMedian(ctx context.Context, scrape func(context.Context) (*serverMemory, error)) (*serverMemory, error) {
	var ms []*serverMemory
	for i := range 3 {
		if i > 0 && !sleepCtx(ctx, 200*time.Millisecond) {
			return nil, context.Cause(ctx)
		}
		m, err := scrape(ctx)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	med := func(f func(*serverMemory) float64) float64 {
		v := []float64{f(ms[0]), f(ms[1]), f(ms[2])}
		slices.Sort(v)
		return v[1]
	}
	return &serverMemory{
		RSSBytes:       med(func(m *serverMemory) float64 { return m.RSSBytes }),
		HeapInuseBytes: med(func(m *serverMemory) float64 { return m.HeapInuseBytes }),
		StackBytes:     med(func(m *serverMemory) float64 { return m.StackBytes }),
		Goroutines:     med(func(m *serverMemory) float64 { return m.Goroutines }),
		Subscribers:    ms[2].Subscribers,
		CPUSeconds:     ms[2].CPUSeconds,
	}, nil
}

// scrapeServer reads the server's own process and runtime figures from its
// /metrics.
func scrapeServer(ctx context.Context, hc *http.Client, metricsURL, token string) (*serverMemory, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := scrapeMetrics(ctx, hc, metricsURL, token)
	if err != nil {
		return nil, err
	}
	need := []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines", "ringcast_subscribers"}
	for _, name := range need {
		if _, ok := m[name]; !ok {
			return nil, fmt.Errorf("%s: no %s (a ringcast server on Linux exports it)", metricsURL, name)
		}
	}
	return &serverMemory{
		CPUSeconds:     m["process_cpu_seconds_total"],
		RSSBytes:       m["process_resident_memory_bytes"],
		HeapInuseBytes: m["go_memstats_heap_inuse_bytes"],
		StackBytes:     m["go_memstats_stack_inuse_bytes"],
		Goroutines:     m["go_goroutines"],
		Subscribers:    m["ringcast_subscribers"],
	}, nil
}

// scrapeMetrics reads the server's /metrics (Prometheus text format, parsed
// by expfmt) and sums each counter's or gauge's samples over its series.
func scrapeMetrics(ctx context.Context, hc *http.Client, metricsURL, token string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", metricsURL, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", metricsURL, err)
	}
	out := make(map[string]float64, len(families))
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				out[name] += m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name] += m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[name] += m.GetUntyped().GetValue()
			}
		}
	}
	return out, nil
}

// ownCPUSeconds is the load tool's own CPU time, where the platform
// reports it.
func ownCPUSeconds() (float64, bool) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return 0, false
	}
	mfs, err := reg.Gather()
	if err != nil && len(mfs) == 0 {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() == "process_cpu_seconds_total" && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue(), true
		}
	}
	return 0, false
}
