package hub_test

import (
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// capableLog is a sliceLog with a duplicate window and retention limits of
// its own (hub.DedupeLog, hub.LimitsLog).
type capableLog struct{ *sliceLog }

var (
	_ hub.DedupeLog = capableLog{}
	_ hub.LimitsLog = capableLog{}
)

func (capableLog) DedupeWindow() time.Duration { return 7 * time.Minute }

func (capableLog) StoreLimits() hub.StoreLimits {
	return hub.StoreLimits{MaxBytes: 1 << 20, MaxAge: time.Hour, MaxCommits: 9}
}

// TestCapabilitiesAreNamedInterfaces: ServerStatus reports a Log's
// duplicate window and limits when it implements DedupeLog and LimitsLog,
// and the hub's own window and no store limits when it does not.
func TestCapabilitiesAreNamedInterfaces(t *testing.T) {
	plain := newHub(t, hub.Config{Log: newSliceLog(testLogEpoch), Window: 4, DedupeWindow: 3 * time.Minute}).Status().GetLimits()
	if w := plain.GetDedupeWindow().AsDuration(); w != 3*time.Minute || plain.GetStore() != nil {
		t.Fatalf("a Log without capabilities: dedupe window %v, store limits %v; want the hub's 3m0s and none", w, plain.GetStore())
	}
	got := newHub(t, hub.Config{Log: capableLog{newSliceLog(testLogEpoch)}, Window: 4, DedupeWindow: 3 * time.Minute}).Status().GetLimits()
	if w, s := got.GetDedupeWindow().AsDuration(), got.GetStore(); w != 7*time.Minute ||
		s.GetMaxBytes() != 1<<20 || s.GetMaxAge().AsDuration() != time.Hour || s.GetMaxCommits() != 9 {
		t.Fatalf("a DedupeLog and LimitsLog: dedupe window %v, store limits %v; want the Log's 7m0s and its limits", w, s)
	}
}
