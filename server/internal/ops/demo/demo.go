// Package demo is ringcast's embedded demonstration feed: river gauges in a
// few catchments. Each round publishes one commit holding a level fact per
// gauge (key = gauge id) and a threshold fact for every gauge whose state
// changed, so a newcomer sees live, keyed, multi-fact commits at once.
package demo

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// Gauge states, from calm to severe.
const (
	StateNormal  = "normal"
	StateWarning = "warning"
	StateSevere  = "severe"
)

// Publisher is what the feed publishes to (a *hub.Hub).
type Publisher interface {
	Publish(facts []*ringcastv1.Fact, idempotencyKey string) (hub.Receipt, error)
}

type gauge struct {
	id, name, catchment string
	base                float64 // typical level, metres
	warning, severe     float64 // thresholds, metres
	response            float64 // how strongly rain lifts this gauge
	level               float64
	prev                float64
	state               string
}

type catchment struct {
	name string
	rain float64 // current rainfall intensity, 0..1+
}

// Feed is the demo source. Create it with New and run it with Run.
type Feed struct {
	interval   time.Duration
	rng        *rand.Rand
	catchments []*catchment
	gauges     []*gauge
}

// New returns a feed publishing one round every interval.
func New(interval time.Duration) *Feed {
	f := &Feed{interval: interval, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed))}
	add := func(c, id, name string, base, warning, severe, response float64) {
		f.gauges = append(f.gauges, &gauge{id: id, name: name, catchment: c, base: base,
			warning: warning, severe: severe, response: response, level: base, prev: base, state: StateNormal})
	}
	for _, c := range []string{"ribble", "lune", "eden", "wyre"} {
		f.catchments = append(f.catchments, &catchment{name: c})
	}
	add("ribble", "g-011", "Ribble at Settle", 0.62, 1.60, 2.40, 1.3)
	add("ribble", "g-014", "Ribble at Samlesbury", 1.10, 3.20, 4.50, 2.6)
	add("ribble", "g-017", "Hodder at Hodder Place", 0.48, 1.90, 2.80, 1.8)
	add("ribble", "g-019", "Calder at Whalley", 0.55, 2.10, 3.10, 2.0)
	add("lune", "g-021", "Lune at Kirkby Lonsdale", 0.70, 2.60, 3.70, 2.2)
	add("lune", "g-023", "Lune at Caton", 0.85, 3.00, 4.20, 2.5)
	add("lune", "g-026", "Wenning at Hornby", 0.40, 1.70, 2.50, 1.5)
	add("eden", "g-031", "Eden at Appleby", 0.52, 2.20, 3.00, 1.9)
	add("eden", "g-034", "Eden at Sheepmount", 1.20, 4.00, 5.50, 3.0)
	add("eden", "g-036", "Petteril at Harraby", 0.35, 1.50, 2.20, 1.4)
	add("wyre", "g-041", "Wyre at St Michael's", 0.90, 2.80, 3.60, 2.1)
	add("wyre", "g-043", "Brock at Bilsborrow", 0.30, 1.20, 1.80, 1.1)
	return f
}

// Run publishes a round every interval until ctx is done or the publisher
// refuses (the hub is draining).
func (f *Feed) Run(ctx context.Context, p Publisher) {
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		if _, err := p.Publish(f.Round(), ""); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round advances the simulation one step and returns its commit: a
// gauge.level fact per gauge, then a gauge.threshold fact per state change.
func (f *Feed) Round() []*ringcastv1.Fact {
	rain := make(map[string]float64, len(f.catchments))
	for _, c := range f.catchments {
		// Storms arrive now and then and decay; drizzle jitters around them.
		if f.rng.Float64() < 0.02 {
			c.rain += 0.6 + f.rng.Float64()
		}
		c.rain = math.Max(0, c.rain*0.93+0.02*(f.rng.Float64()-0.5))
		rain[c.name] = c.rain
	}
	var levels, crossings []*ringcastv1.Fact
	for _, g := range f.gauges {
		g.prev = g.level
		target := g.base + g.response*rain[g.catchment]
		g.level += 0.12*(target-g.level) + 0.01*(f.rng.Float64()-0.5)
		g.level = round3(math.Max(0.05, g.level)) // what is published is what is judged
		state := StateNormal
		switch {
		case g.level >= g.severe:
			state = StateSevere
		case g.level >= g.warning:
			state = StateWarning
		}
		levels = append(levels, g.fact("gauge.level", g.id, map[string]any{
			"gauge":     g.id,
			"name":      g.name,
			"catchment": g.catchment,
			"level_m":   g.level,
			"trend":     trend(g.level - g.prev),
			"state":     state,
			"warning_m": g.warning,
			"severe_m":  g.severe,
		}))
		if state != g.state {
			crossings = append(crossings, g.fact("gauge.threshold", "", map[string]any{
				"gauge":   g.id,
				"name":    g.name,
				"from":    g.state,
				"to":      state,
				"level_m": g.level,
			}))
			g.state = state
		}
	}
	return append(levels, crossings...)
}

func (g *gauge) fact(typ, key string, data map[string]any) *ringcastv1.Fact {
	s, err := structpb.NewStruct(data)
	if err != nil {
		panic(err) // the maps above hold only strings and numbers
	}
	return &ringcastv1.Fact{
		Topic:   "gauges/" + g.catchment + "/" + g.id,
		Type:    typ,
		Key:     key,
		Payload: &ringcastv1.Fact_Data{Data: s},
	}
}

func trend(d float64) string {
	switch {
	case d > 0.005:
		return "rising"
	case d < -0.005:
		return "falling"
	}
	return "steady"
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
