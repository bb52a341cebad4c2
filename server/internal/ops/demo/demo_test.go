package demo

import (
	"math/rand/v2"
	"testing"
	"time"

	"buf.build/go/protovalidate"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// TestRoundsAreValidCommitsWithALevelPerGaugeAndCrossingsOnChange runs many
// rounds: every commit passes the publish rules, holds one keyed level fact
// per gauge first, and a threshold fact exactly when a gauge's state changed.
func TestRoundsAreValidCommitsWithALevelPerGaugeAndCrossingsOnChange(t *testing.T) {
	f := New(time.Second)
	f.rng = rand.New(rand.NewPCG(1, 2)) // deterministic weather
	states := map[string]string{}
	for _, g := range f.gauges {
		states[g.id] = StateNormal
	}
	crossings := 0
	for round := range 1200 {
		facts := f.Round()
		if err := protovalidate.Validate(&ringcastv1.PublishRequest{Facts: facts}); err != nil {
			t.Fatalf("round %d is not a valid publish: %v", round, err)
		}
		if len(facts) < len(f.gauges) {
			t.Fatalf("round %d has %d facts for %d gauges", round, len(facts), len(f.gauges))
		}
		changed := map[string]bool{}
		for i, g := range f.gauges {
			lv := facts[i]
			d := lv.GetData().AsMap()
			if lv.Type != "gauge.level" || lv.Key != g.id || lv.Topic != "gauges/"+g.catchment+"/"+g.id {
				t.Fatalf("round %d fact %d = %v, want %s's level", round, i, lv, g.id)
			}
			level, state := d["level_m"].(float64), d["state"].(string)
			want := StateNormal
			if level >= g.severe {
				want = StateSevere
			} else if level >= g.warning {
				want = StateWarning
			}
			if state != want || level <= 0 {
				t.Fatalf("round %d %s: level %v state %q, want state %q", round, g.id, level, state, want)
			}
			if state != states[g.id] {
				changed[g.id] = true
				states[g.id] = state
			}
		}
		for _, c := range facts[len(f.gauges):] {
			d := c.GetData().AsMap()
			id := d["gauge"].(string)
			if c.Type != "gauge.threshold" || c.Key != "" || !changed[id] || d["to"] != states[id] {
				t.Fatalf("round %d: unexpected crossing %v", round, c)
			}
			delete(changed, id)
			crossings++
		}
		if len(changed) > 0 {
			t.Fatalf("round %d: state changes without a crossing fact: %v", round, changed)
		}
	}
	if crossings == 0 {
		t.Fatal("1200 rounds and no gauge ever crossed a threshold: the demo shows nothing")
	}
}
