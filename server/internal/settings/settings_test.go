package settings_test

import (
	"encoding/json"
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
