package stream_test

import (
	"maps"
	"slices"
	"testing"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/face/stream"
)

// TestStreamingPaths: the read deadline's clearing is installed for the
// EventService's one streaming method, by the path it is served on.
func TestStreamingPaths(t *testing.T) {
	got := slices.Sorted(maps.Keys(stream.Paths(ringcastv1.File_ringcast_v1_ringcast_proto.Services().ByName("EventService"))))
	if want := []string{ringcastv1connect.EventServiceSubscribeEventsProcedure}; !slices.Equal(got, want) {
		t.Fatalf("streaming paths %q, want %q", got, want)
	}
}
