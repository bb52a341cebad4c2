package hub

import (
	"testing"
	"time"
)

// TestNextHoldFollowsTheLoad: the hold doubles while the server is busy,
// up to maxHoldFactor×coalesce, and halves back to coalesce once it keeps
// up; a lull inside an overload does not start it over.
func TestNextHoldFollowsTheLoad(t *testing.T) {
	const c = time.Millisecond
	hold := c
	var grew []time.Duration
	for range 6 {
		hold = nextHold(hold, c, true)
		grew = append(grew, hold)
	}
	want := []time.Duration{2 * c, 4 * c, 8 * c, 16 * c, 16 * c, 16 * c}
	for i := range want {
		if grew[i] != want[i] {
			t.Fatalf("busy wake-ups grew the hold %v, want %v", grew, want)
		}
	}
	if got := nextHold(nextHold(hold, c, false), c, true); got != 16*c {
		t.Fatalf("one wake-up keeping up inside an overload left the hold at %v, want it back at %v", got, 16*c)
	}
	var shrank []time.Duration
	for range 5 {
		hold = nextHold(hold, c, false)
		shrank = append(shrank, hold)
	}
	want = []time.Duration{8 * c, 4 * c, 2 * c, c, c}
	for i := range want {
		if shrank[i] != want[i] {
			t.Fatalf("wake-ups keeping up shrank the hold %v, want %v", shrank, want)
		}
	}
}

// TestKickDelayCountsFromReady: a kick sent while the notifier was holding
// a wake-up, and taken as soon as it was ready again, did not wait; one
// sent while it was ready waited from its sending.
func TestKickDelayCountsFromReady(t *testing.T) {
	const ms = time.Millisecond
	// Held from 10 to 26 ms; a publisher kicked at 11 ms; the notifier woke
	// the streams, was ready at 26 ms and took the kick at 26.01 ms.
	if d := kickDelay(26*ms+10*time.Microsecond, 11*ms, 26*ms); d != 10*time.Microsecond {
		t.Fatalf("a kick sent during a hold waited %v, want 10µs", d)
	}
	// Ready at 26 ms, kicked at 30 ms, taken at 32 ms: saturated.
	if d := kickDelay(32*ms, 30*ms, 26*ms); d != 2*ms {
		t.Fatalf("a kick sent while the notifier was ready waited %v, want 2ms", d)
	}
}
