package names_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/ringcast/ringcast/server/internal/face/names"
)

// TestExpiredMessageIsTheClientsOne: both clients tell an expired token
// (reconnect with a fresh one) from any other refusal (give up) by this
// message alone, and take it from clients/conformance/defaults.json; the
// server must send exactly that wording.
func TestExpiredMessageIsTheClientsOne(t *testing.T) {
	raw, err := os.ReadFile("../../../../clients/conformance/defaults.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		TokenExpiredMessage string `json:"tokenExpiredMessage"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if d.TokenExpiredMessage != names.TokenExpired {
		t.Fatalf("names.TokenExpired is %q, the clients expect %q (clients/conformance/defaults.json)", names.TokenExpired, d.TokenExpiredMessage)
	}
}
