package settings_test

import (
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/settings"
)

// TestClientsIdleTimeoutFollowsTheHeartbeat: before a stream announces its
// heartbeat interval, every client waits heartbeatMultiple × the server's
// default heartbeat (clients/conformance/defaults.json,
// idleTimeout.untilHeartbeatKnownMs): a change of the server's default
// without the clients' fails here, rather than have clients cut healthy
// streams or wait too long on dead ones.
func TestClientsIdleTimeoutFollowsTheHeartbeat(t *testing.T) {
	raw, err := os.ReadFile("../../../clients/conformance/defaults.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		IdleTimeout struct {
			HeartbeatMultiple     int64 `json:"heartbeatMultiple"`
			UntilHeartbeatKnownMs int64 `json:"untilHeartbeatKnownMs"`
		} `json:"idleTimeout"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	want := time.Duration(d.IdleTimeout.HeartbeatMultiple) * settings.Heartbeat.Default
	if got := time.Duration(d.IdleTimeout.UntilHeartbeatKnownMs) * time.Millisecond; got != want {
		t.Fatalf("untilHeartbeatKnownMs is %v; the server's default heartbeat %v × heartbeatMultiple %d is %v",
			got, settings.Heartbeat.Default, d.IdleTimeout.HeartbeatMultiple, want)
	}
}

// TestCheckIsTheOneWording: a value out of its row is told by the row, in
// the wording serve's flags and every Validate use; 0 and negatives pass
// only where the row gives them a meaning; CheckMin drops the upper bound
// only.
func TestCheckIsTheOneWording(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{settings.Window.Check(0), "window must be between 1 and 16777216, not 0"},
		{settings.Window.Check(1 << 25), "window must be between 1 and 16777216, not 33554432"},
		{settings.Heartbeat.Check(time.Millisecond), "heartbeat must be between 100ms and 1h (or 0: the default), not 1ms"},
		{settings.Lease.Check(2 * time.Millisecond), "lease must be between 1s and 168h (or 0: the default; negative: none), not 2ms"},
		{settings.PublishRate.Check(math.NaN()), "publish-rate must be a finite number between 0.001 and 10000000 (or negative: none), not NaN"},
		{settings.Coalesce.CheckMin(-time.Second), "coalesce must be at least 0s, not -1s"},
		{settings.Exceeds("coalesce", "heartbeat"), "coalesce must not exceed heartbeat"},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
	for _, err := range []error{
		settings.Window.Check(1), settings.Window.Check(1 << 24), settings.Heartbeat.Check(0), settings.Lease.Check(-1), settings.PublishRate.Check(-1),
		settings.Coalesce.CheckMin(time.Hour), settings.MaxConns.Check(-1), settings.NATSMaxMsgs.Check(0),
	} {
		if err != nil {
			t.Errorf("refused: %v", err)
		}
	}
}
