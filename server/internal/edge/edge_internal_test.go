package edge

import (
	"maps"
	"slices"
	"testing"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

// TestStreamingPaths: the read deadline's clearing is installed for the
// EventService's one streaming method, by the path it is served on.
func TestStreamingPaths(t *testing.T) {
	got := slices.Sorted(maps.Keys(StreamingPaths(ringcastv1.File_ringcast_v1_ringcast_proto.Services().ByName("EventService"))))
	if want := []string{ringcastv1connect.EventServiceSubscribeEventsProcedure}; !slices.Equal(got, want) {
		t.Fatalf("streaming paths %q, want %q", got, want)
	}
}

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
