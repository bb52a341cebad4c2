// Package metrics is ringcast's Prometheus instrumentation
// (docs/metrics.md): a registry per server, fed by the hub through the
// hub.Observer interface and read from the hub on scrape.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/face/names"
)

// Outcomes are the subscribe outcomes, pre-registered per face.
var Outcomes = []hub.Outcome{
	hub.OutcomeNew, hub.OutcomeResumed, hub.OutcomeTooOld, hub.OutcomeAhead,
	hub.OutcomeEpochMismatch, hub.OutcomeFactOutOfRange, hub.OutcomeMalformedCursor,
	hub.OutcomeCommitMismatch,
}

// outcomeReasons is the Reason each outcome but new and resumed tells the
// client: its label is that reason's text name (names.ReasonName, the one
// derivation from the proto's enum), so a reason has one spelling in the
// metrics, the SSE gap event and the command line.
var outcomeReasons = map[hub.Outcome]ringcastv1.Reason{
	hub.OutcomeTooOld:          ringcastv1.Reason_REASON_CURSOR_TOO_OLD,
	hub.OutcomeAhead:           ringcastv1.Reason_REASON_CURSOR_AHEAD,
	hub.OutcomeEpochMismatch:   ringcastv1.Reason_REASON_EPOCH_MISMATCH,
	hub.OutcomeFactOutOfRange:  ringcastv1.Reason_REASON_FACT_OUT_OF_RANGE,
	hub.OutcomeMalformedCursor: ringcastv1.Reason_REASON_MALFORMED_CURSOR,
	hub.OutcomeCommitMismatch:  ringcastv1.Reason_REASON_COMMIT_MISMATCH,
}

// outcomeLabels is the outcome label of each of Outcomes.
var outcomeLabels = func() map[hub.Outcome]string {
	m := make(map[hub.Outcome]string, len(Outcomes))
	for _, o := range Outcomes {
		m[o] = string(o)
		if r, ok := outcomeReasons[o]; ok {
			m[o] = names.ReasonName(r)
		}
	}
	return m
}()

// Label is the outcome label of o: the text name of the reason it tells
// the client ("cursor_too_old"), or "new" and "resumed".
func Label(o hub.Outcome) string {
	if l, ok := outcomeLabels[o]; ok {
		return l
	}
	return string(o)
}

// Metrics holds one server's collectors and registry. It implements
// hub.Observer; its methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	subscribes  *prometheus.CounterVec
	lagged      *prometheus.CounterVec
	subscribers *prometheus.GaugeVec
	commits     prometheus.Counter
	facts       prometheus.Counter
	publish     prometheus.Histogram
	lag         *prometheus.HistogramVec
	replayAge   *prometheus.HistogramVec
	// lag's and replayAge's series by face, looked up once (Delivered runs
	// for every batch a stream writes); read-only after New.
	lagBy, replayAgeBy map[string]prometheus.Observer
	rpc                *rpcMetrics
	authReject         *prometheus.CounterVec
	limits             *limitMetrics
}

var (
	_ hub.Observer  = (*Metrics)(nil)
	_ auth.Observer = (*Metrics)(nil)
)

// New returns metrics on a fresh registry holding ringcast's collectors and
// the Go and process collectors. faces are the names of the faces streams
// arrive on (hub.Request.Face): every series labelled by face is
// registered for each of them from the start.
func New(faces ...string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		subscribes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringcast_subscribes_total",
			Help: "Streams opened, by face (connect, sse) and outcome (new, resumed, or the reason told the client: cursor_too_old, cursor_ahead, epoch_mismatch, fact_out_of_range, malformed_cursor, commit_mismatch).",
		}, []string{"face", "outcome"}),
		lagged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringcast_lagging_cutoffs_total",
			Help: "Live streams cut because they fell more than the window behind (ResyncRequired SUBSCRIBER_LAGGING), by face.",
		}, []string{"face"}),
		subscribers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ringcast_subscribers",
			Help: "Streams open now, by face.",
		}, []string{"face"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringcast_commits_published_total",
			Help: "Commits appended to the ring (idempotent duplicates are not counted).",
		}),
		facts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringcast_facts_published_total",
			Help: "Facts in the commits appended to the ring.",
		}),
		publish: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringcast_publish_duration_seconds",
			Help:    "Time to append one commit to the ring (lock, dedupe, state table), excluding the request's transport and validation.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10), // 1µs .. ~0.26s
		}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ringcast_delivery_lag_seconds",
			Help:    "Live delivery lag, by face: for each batch written to a stream after its CaughtUp, the age of the batch's newest event (commit time to write).",
			Buckets: prometheus.ExponentialBuckets(1e-4, 4, 10), // 100µs .. ~26s
		}, []string{"face"}),
		replayAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ringcast_replay_event_age_seconds",
			Help:    "Replay catch-up, by face: for each batch written to a stream before its CaughtUp (resuming from a cursor, or up to an until bound), the age of the batch's newest event.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 4, 12), // 1ms .. ~70min
		}, []string{"face"}),
		rpc: newRPCMetrics(),
		authReject: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringcast_auth_rejections_total",
			Help: "Requests refused by token checks (auth jwt), by face (connect, sse) and reason (missing, invalid, expired, forbidden).",
		}, []string{"face", "reason"}),
	}
	m.reg.MustRegister(m.subscribes, m.lagged, m.subscribers, m.commits, m.facts, m.publish, m.lag, m.replayAge, m.authReject,
		m.rpc.handled, m.rpc.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every face is pre-registered so every series exists from the first
	// scrape (a rate over a series that appears late misses its first
	// increments).
	m.lagBy = make(map[string]prometheus.Observer, len(faces))
	m.replayAgeBy = make(map[string]prometheus.Observer, len(faces))
	for _, f := range faces {
		for _, o := range Outcomes {
			m.subscribes.WithLabelValues(f, Label(o))
		}
		m.lagged.WithLabelValues(f)
		m.subscribers.WithLabelValues(f)
		m.lagBy[f] = m.lag.WithLabelValues(f)
		m.replayAgeBy[f] = m.replayAge.WithLabelValues(f)
		for _, r := range auth.Reasons {
			m.authReject.WithLabelValues(f, string(r))
		}
	}
	m.limits = newLimitMetrics(m.reg)
	return m
}

// Watch registers the gauges read from h on every scrape: head and oldest
// seq, window size, state-table evictions and the instance's identity.
// Call it once, with the hub that reports to m.
func (m *Metrics) Watch(h *hub.Hub) {
	st := h.Status()
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringcast_head_seq",
			Help: "The highest seq assigned (head).",
		}, func() float64 { _, head := h.Bounds(); return float64(head) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringcast_oldest_seq",
			Help: "The lowest seq still in the ring (oldest): a cursor at oldest-1 or later resumes; an older one is too_old.",
		}, func() float64 { oldest, _ := h.Bounds(); return float64(oldest) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringcast_window_size",
			Help: "W, the number of positioned events the ring retains.",
		}, func() float64 { return float64(h.Window()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ringcast_state_table_evictions_total",
			Help: "Keys dropped from the latest-per-key table because it reached its key or byte limit (LATEST_PER_KEY snapshots no longer hold them).",
		}, func() float64 { return float64(h.StateEvictions()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringcast_ring_bytes",
			Help: "Bytes the ring holds: its events as held in memory plus the encodings cached on them (bounded by --max-ring-bytes).",
		}, func() float64 { return float64(h.RingBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringcast_state_table_bytes",
			Help: "Bytes the latest-per-key table holds: its facts as held in memory and its entries (bounded by --max-state-bytes).",
		}, func() float64 { return float64(h.StateBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringcast_effective_window",
			Help: "Positioned events the ring holds now (head - oldest + 1): below ringcast_window_size when the byte bound drops events first.",
		}, func() float64 { oldest, head := h.Bounds(); return float64(head + 1 - min(oldest, head+1)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ringcast_dedupe_refusals_total",
			Help: "Publishes refused (resource_exhausted) because the dedupe table was full of idempotency keys still inside their window.",
		}, func() float64 { return float64(h.DedupeRefusals()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "ringcast_instance_info",
			Help:        "Always 1; labels name the running instance (epoch as in SSE ids and logs) and its version.",
			ConstLabels: prometheus.Labels{"epoch": epoch.Format(h.Epoch()), "version": st.GetServerVersion()},
		}, func() float64 { return 1 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringcast_boot_time_seconds",
			Help: "Unix time the instance booted (minted its epoch).",
		}, func() float64 { return float64(st.GetBootTime().AsTime().UnixNano()) / 1e9 }),
	)
}

// Handler serves the registry in the Prometheus text format, or in
// OpenMetrics when the request's Accept header asks for it
// (application/openmetrics-text).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// Subscribed implements hub.Observer.
func (m *Metrics) Subscribed(face string, outcome hub.Outcome) {
	m.subscribes.WithLabelValues(face, Label(outcome)).Inc()
}

// StreamStarted implements hub.Observer.
func (m *Metrics) StreamStarted(face string) { m.subscribers.WithLabelValues(face).Inc() }

// StreamEnded implements hub.Observer.
func (m *Metrics) StreamEnded(face string) { m.subscribers.WithLabelValues(face).Dec() }

// Lagged implements hub.Observer.
func (m *Metrics) Lagged(face string) { m.lagged.WithLabelValues(face).Inc() }

// Published implements hub.Observer.
func (m *Metrics) Published(facts int, took time.Duration) {
	m.commits.Inc()
	m.facts.Add(float64(facts))
	m.publish.Observe(took.Seconds())
}

// Delivered implements hub.Observer: live batches feed the delivery lag,
// replayed ones the replay age.
func (m *Metrics) Delivered(face string, live bool, age time.Duration) {
	vec, by := m.replayAge, m.replayAgeBy
	if live {
		vec, by = m.lag, m.lagBy
	}
	o, ok := by[face]
	if !ok {
		o = vec.WithLabelValues(face)
	}
	o.Observe(age.Seconds())
}

// AuthRejected implements auth.Observer.
func (m *Metrics) AuthRejected(face string, reason auth.Reason) {
	m.authReject.WithLabelValues(face, string(reason)).Inc()
}
