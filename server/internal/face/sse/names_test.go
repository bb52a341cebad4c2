package sse

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/face/names"
)

// TestEventNames: an SSE event is named after the response's oneof field,
// with "-" for "_" (caught_up is caught-up), except server_status, which
// is "status"; heartbeat and resync_required are comments, not events. A
// field added to the oneof fails here until the face names it.
func TestEventNames(t *testing.T) {
	except := map[protoreflect.Name]string{
		"server_status":   names.EventStatus,
		"heartbeat":       "",
		"resync_required": "",
	}
	oneof := (&ringcastv1.SubscribeEventsResponse{}).ProtoReflect().Descriptor().Oneofs().ByName("event")
	for i := range oneof.Fields().Len() {
		fd := oneof.Fields().Get(i)
		r := &ringcastv1.SubscribeEventsResponse{}
		m := r.ProtoReflect()
		m.Set(fd, m.NewField(fd))
		want, ok := except[fd.Name()]
		if !ok {
			want = strings.ReplaceAll(string(fd.Name()), "_", "-")
		}
		if got := eventName(r); got != want {
			t.Errorf("event name of %s = %q, want %q", fd.Name(), got, want)
		}
	}
	if names.EventCaughtUp != "caught-up" {
		t.Errorf("names.EventCaughtUp = %q; docs/sse.md names it caught-up", names.EventCaughtUp)
	}
}
