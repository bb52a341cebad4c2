package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringcast/ringcast/server/internal/edge/limit"
)

// limitMetrics counts refusals by the per-client and edge limits.
type limitMetrics struct {
	rejections *prometheus.CounterVec
}

func newLimitMetrics(reg *prometheus.Registry) *limitMetrics {
	m := &limitMetrics{rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ringcast_limit_rejections_total",
		Help: "Requests and connections refused by a limit (resource_exhausted, HTTP 429), by limit: streams_per_client, publish_rate, publish_byte_rate, conns, conns_per_client, h2_reset (HTTP/2 connections cut for rapid reset, and connections refused during the penalty that follows).",
	}, []string{"limit"})}
	for _, l := range limit.Names {
		m.rejections.WithLabelValues(l)
	}
	reg.MustRegister(m.rejections)
	return m
}

// LimitRejected counts one refusal by the named limit (limit.Observer).
func (m *Metrics) LimitRejected(name string) { m.limits.rejections.WithLabelValues(name).Inc() }

// WatchWriteCuts registers ringcast_write_timeout_cuts_total, read from
// cuts on every scrape (the server's write guard counts them).
func (m *Metrics) WatchWriteCuts(cuts func() uint64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "ringcast_write_timeout_cuts_total",
		Help: "Responses (streams above all) cut because a write was blocked longer than --write-timeout: a subscriber that stopped reading.",
	}, func() float64 { return float64(cuts()) }))
}
