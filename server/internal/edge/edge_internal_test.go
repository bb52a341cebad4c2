package edge

import (
	"testing"
)

// TestMaxConnsPerClientDefault: the share is a quarter of --max-conns,
// none when --max-conns has no bound; a value given is kept.
func TestMaxConnsPerClientDefault(t *testing.T) {
	for _, c := range []struct{ conns, per, want int }{{16, 0, 4}, {1000, 0, 250}, {-1, 0, -1}, {1000, 7, 7}, {1000, -1, -1}} {
		e := Config{MaxConns: c.conns, MaxConnsPerClient: c.per}.WithDefaults()
		if e.MaxConnsPerClient != c.want {
			t.Errorf("max-conns %d, max-conns-per-client %d: %d, want %d", c.conns, c.per, e.MaxConnsPerClient, c.want)
		}
	}
}
